import { env } from "cloudflare:workers";
import { anotherInstance } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { type BridgeError, describeModules, Executor } from "../src/index";
import { Counters, fixtureModules } from "./fixtures/modules";
import { freshFixture, inFixture, run } from "./helpers";

function refusal(run: Promise<unknown>): Promise<{ code: string; message: string }> {
  return run.then(
    () => ({ code: "none", message: "ran" }),
    (error: BridgeError) => ({ code: error.code, message: error.message }),
  );
}

describe("modules", () => {
  it("refuses a program importing a private module before anything runs, naming it", async () => {
    const stub = freshFixture();
    const outcome = await inFixture(stub, (instance) =>
      refusal(
        instance.executor.execute(`
          import { secret } from "test:private";
          import { write } from "test:probe";
          await write();
          export default async function () { return secret(); }
        `),
      ),
    );
    expect(outcome.code).toBe("bridge/module-private");
    expect(outcome.message).toContain('"test:private"');
    const state = await inFixture(stub, (instance, state) => ({
      writes: instance.counters.writes,
      executions: state.storage.sql.exec("SELECT count(*) AS n FROM dk_bridge_executions").one().n,
    }));
    expect(state).toEqual({ writes: 0, executions: 0 });
  });

  it("lets a source module import the private module a program cannot", async () => {
    const stub = freshFixture();
    const execution = await run(
      stub,
      `
      import { reveal } from "test:wrapped";
      import { twice } from "test:util";
      export default async function () { return [await reveal(), twice(21)]; }
    `,
    );
    expect(execution.result).toEqual(["wrapped:s3cret", 42]);
  });

  it("refuses unknown modules, computed imports and programs without a default export", async () => {
    const stub = freshFixture();
    const outcomes = await inFixture(stub, (instance) =>
      Promise.all([
        refusal(
          instance.executor.execute(`import x from "cloudflare:workers"; export default () => x;`),
        ),
        refusal(instance.executor.execute(`export default async () => import("test:" + "probe");`)),
        refusal(instance.executor.execute(`export const notDefault = 1;`)),
        refusal(
          instance.executor.execute(`import { a } from "./local.js"; export default () => a;`),
        ),
        refusal(instance.executor.execute(`export default async () => import("test:private");`)),
      ]),
    );
    expect(outcomes.map((o) => o.code)).toEqual([
      "bridge/not-found",
      "bridge/invalid-program",
      "bridge/invalid-program",
      "bridge/not-found",
      "bridge/module-private",
    ]);
    expect(outcomes[0]?.message).toContain('"cloudflare:workers"');
    expect(outcomes[0]?.message).toContain("codemode:jobs");
    expect(outcomes[0]?.message).not.toContain("test:private");
  });

  it("describes what a program may import, with handle shapes and descriptions, omitting private modules", () => {
    const text = describeModules(fixtureModules(new Counters()));
    expect(text).toContain('declare module "codemode:jobs" {');
    expect(text).toContain("/** Create jobs and run them. */");
    expect(text).toContain("export function createJob(options: { name: string }): Promise<Job>;");
    expect(text).toContain("start(input?: unknown): Promise<Run>;");
    expect(text).toContain("info(...args: unknown[]): Promise<unknown>; // read-only");
    expect(text).toContain("/** One run of a job. */");
    expect(text).toContain("wait(...args: unknown[]): Promise<unknown>; // read-only");
    expect(text).toContain('declare module "test:wrapped" {');
    expect(text).toContain("export function reveal(): Promise<string>;");
    expect(text).not.toContain("test:private");
    expect(text).not.toContain("Internal: never shown");
  });

  it("leaves writes out of a read-only description", () => {
    const text = describeModules(fixtureModules(new Counters()), { access: "read" });
    expect(text).not.toContain("createJob");
    expect(text).toContain(
      "export function counters(...args: unknown[]): Promise<unknown>; // read-only",
    );
    expect(text).not.toContain("export function write");
  });

  it("refuses malformed module configurations when the executor is created", async () => {
    const bad = [
      { "node:fs": { read: () => 1 } },
      // biome-ignore lint/suspicious/noThenProperty: a module exporting then must be refused.
      { "x:y": { then: () => 1 } },
      { "x:y": { value: 1 } },
      { "x:y": {} },
    ];
    const codes = await inFixture(freshFixture(), (_instance, state) =>
      bad.map((modules) => {
        try {
          new Executor(anotherInstance(state), { loader: env.LOADER, modules: modules as never });
          return "none";
        } catch (error) {
          return (error as BridgeError).code;
        }
      }),
    );
    expect(codes).toEqual(bad.map(() => "bridge/invalid-module"));
  });
});
