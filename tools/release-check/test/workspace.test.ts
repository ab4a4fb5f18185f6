import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { publicPackages, tarballsFor, workspacePackages } from "../src/workspace.ts";

const root = resolve(import.meta.dirname, "../../..");
const read = (file: string) => readFileSync(join(root, file), "utf8");

describe("the packages a release holds", () => {
  it("are exactly the workspace's packages under packages/, none of them private", () => {
    for (const pkg of workspacePackages(root)) {
      expect(pkg.private, `${pkg.name} (${pkg.dir})`).toBe(!pkg.dir.startsWith("packages/"));
    }
  });

  it("are each listed in RELEASING.md, and RELEASING.md lists no other", () => {
    const listed = [...read("RELEASING.md").matchAll(/^- `((?:@durablekit\/)?[a-z-]+)`/gm)].map(
      (match) => match[1],
    );
    expect(listed.sort()).toEqual(publicPackages(root).map((pkg) => pkg.name));
  });

  it("install from tarballs with the tarballs the README names for each, derived from their dependencies", () => {
    const packages = publicPackages(root);
    const rows = new Map(
      [...read("README.md").matchAll(/^\| `([^`]+)` \| ((?:`[a-z-]+`(?:, )?)+) \|$/gm)].map(
        (match) => [match[1], [...(match[2] ?? "").matchAll(/`([a-z-]+)`/g)].map((m) => m[1])],
      ),
    );
    for (const pkg of packages.filter((p) => p.name.startsWith("@durablekit/"))) {
      const needed = tarballsFor(pkg.name, packages).map((name) =>
        name.slice("@durablekit/".length),
      );
      expect(rows.get(pkg.name), pkg.name).toEqual(needed);
    }
    expect(rows.get("@durablekit/tasks")).toEqual(["compose", "handle-journal", "tasks"]);
  });
});
