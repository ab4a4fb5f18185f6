import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkSnippets, Guide } from "../src/index.ts";

const projectDir = fileURLToPath(new URL("..", import.meta.url));
const options = { projectDir, declarations: [`${projectDir}snippets/env.d.ts`] };

describe("the snippet check", () => {
  it("fails on a block that does not compile, at its line in its guide, and skips a partial one", () => {
    const guide = Guide.read(
      fileURLToPath(new URL("./fixtures/snippets/broken.md", import.meta.url)),
      "broken.md",
    );
    const report = checkSnippets([guide], options);
    expect(report.checked).toBe(2);
    expect(report.partial).toBe(1);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatchObject({ guide: "broken.md", line: 21 });
    expect(report.problems[0]?.message).toMatch(/retainForever/);
  });
});
