import { RpcTarget } from "cloudflare:workers";
import { decode, encode, handle } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import type { HostModuleEntry } from "../src/modules/module-registry";
import { HandleTable } from "../src/run/handle-table";
import { minifiedRun } from "./fixtures/modules";
import { freshFixture, run } from "./helpers";

function hostModule(specifier: string, object: object, handleId: number): HostModuleEntry {
  return {
    kind: "host",
    specifier,
    file: `${specifier}.js`,
    handleId,
    private: false,
    meta: undefined,
    object,
    functions: new Map(),
  };
}

describe("handle kinds", () => {
  it("takes a handle's kind from its creating module's revive map, never from its constructor name", () => {
    const reviving = hostModule(
      "codemode:jobs",
      { [handle.revive]: { Run: () => minifiedRun() } },
      1,
    );
    const plain = hostModule("codemode:plain", {}, 2);
    const table = new HandleTable([reviving, plain], 10);
    const fresh: number[] = [];
    const revivable = table.addTarget(minifiedRun(), "codemode:jobs", "1", fresh);
    const unrevivable = table.addTarget(minifiedRun(), "codemode:plain", "2", fresh);
    const first = table.get(revivable.id);
    const second = table.get(unrevivable.id);
    expect(minifiedRun().constructor.name).toBe("a");
    expect(first).toMatchObject({ handleKind: "Run", label: "codemode:jobs#Run" });
    // Its module has no [handle.revive] map, so the object has no revivable kind.
    expect(second).toMatchObject({ handleKind: null, label: "codemode:plain#Run" });
  });

  it("builds a handle's record from its module and kind, while the object serializes only its own JSON", () => {
    class Run extends RpcTarget {
      static readonly [handle.kind] = "Run";
      constructor(readonly id: string) {
        super();
      }
      [handle.serialize]() {
        return { id: this.id };
      }
    }
    const jobs = hostModule("codemode:jobs", { [handle.revive]: { Run: () => null } }, 1);
    const table = new HandleTable([jobs], 10);
    const run = new Run("r1");
    table.addTarget(run, "codemode:jobs", "1", []);
    const kinds = (h: object) => table.recordKind(h) ?? "unknown#Unknown";
    expect(run[handle.serialize]()).toEqual({ id: "r1" });
    const seen: unknown[] = [];
    decode(encode({ run }, { handleKind: kinds }), {
      revive: (record) => seen.push(record),
    });
    expect(seen).toEqual([{ $handle: "codemode:jobs#Run", value: { id: "r1" } }]);
    expect(table.recordKind(new Run("not held"))).toBeNull();
  });

  it("shows the program an object by its declared kind, not its minified class name", async () => {
    const execution = await run(
      freshFixture(),
      `import { minified } from "test:probe";
       export default async function () {
         const run = await minified();
         return [Object.prototype.toString.call(run), await run.status()];
       }`,
    );
    expect(execution.result).toEqual(["[object test:probe#Run]", "running"]);
  });
});
