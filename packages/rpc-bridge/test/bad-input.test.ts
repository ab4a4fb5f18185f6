import { env } from "cloudflare:workers";
import type { AlarmPart } from "@durablekit/compose";
import { anotherInstance, thrownCode } from "@durablekit/test-kit";
import { describe, expect, expectTypeOf, it } from "vitest";
import {
  describeModules,
  Executor,
  hostModule,
  isBridgeError,
  privateModule,
  readOnly,
  readOnlyMethods,
  sourceModule,
} from "../src/index";
import { freshFixture, inFixture } from "./helpers";

const INVALID = "bridge/invalid-argument";

const codeOf = (fn: () => unknown) => thrownCode(fn, isBridgeError);

describe("bad input", () => {
  it("is an alarm part", () => {
    expectTypeOf<Executor>().toMatchTypeOf<AlarmPart>();
  });

  it("refuses malformed constructor arguments with bridge/invalid-argument", async () => {
    const codes = await inFixture(freshFixture(), async (_instance, state) => {
      const loader = env.LOADER;
      const modules = {};
      const make = (ctx: unknown, options: unknown) => () =>
        new Executor(ctx as DurableObjectState, options as never);
      return {
        ctx: await codeOf(make(null, { loader, modules })),
        storage: await codeOf(make(state.storage, { loader, modules })),
        options: await codeOf(make(state, undefined)),
        loader: await codeOf(make(state, { loader: {}, modules })),
        modules: await codeOf(make(state, { loader, modules: null })),
        limitsShape: await codeOf(make(state, { loader, modules, limits: 5 })),
        limitUnknown: await codeOf(make(state, { loader, modules, limits: { maxWidgets: 1 } })),
        limitValue: await codeOf(make(state, { loader, modules, limits: { maxCalls: 0 } })),
        access: await codeOf(make(state, { loader, modules, access: "write" })),
        onInterrupt: await codeOf(make(state, { loader, modules, onInterrupt: "retry" })),
        onEvent: await codeOf(make(state, { loader, modules, onEvent: 1 })),
        now: await codeOf(make(state, { loader, modules, now: "soon" })),
        date: await codeOf(make(state, { loader, modules, compatibilityDate: 2026 })),
        flags: await codeOf(make(state, { loader, modules, compatibilityFlags: [1] })),
      };
    });
    for (const [name, code] of Object.entries(codes)) expect(code, name).toBe(INVALID);
  });

  it("refuses malformed execute, get, cancel and prune arguments, and records nothing", async () => {
    const stub = freshFixture();
    const result = await inFixture(stub, async (instance, state) => {
      const x = instance.executor;
      const program = "export default () => 1;";
      const codes = {
        options: await codeOf(() => x.execute(program, undefined, null as never)),
        idEmpty: await codeOf(() => x.execute(program, undefined, { id: "" })),
        idLong: await codeOf(() => x.execute(program, undefined, { id: "x".repeat(257) })),
        idSurrogate: await codeOf(() => x.execute(program, undefined, { id: "\uD800" })),
        idType: await codeOf(() => x.execute(program, undefined, { id: 5 as never })),
        signal: await codeOf(() => x.execute(program, undefined, { signal: {} as never })),
        access: await codeOf(() => x.execute(program, undefined, { access: "all" as never })),
        onInterrupt: await codeOf(() =>
          x.execute(program, undefined, { onInterrupt: "never" as never }),
        ),
        get: await codeOf(() => x.get(5 as never)),
        cancel: await codeOf(() => x.cancel(null as never)),
        cancelReason: await codeOf(() => x.cancel("id", 5 as never)),
        prune: await codeOf(() => x.prune(Number.NaN)),
        pruneType: await codeOf(() => x.prune("yesterday" as never)),
      };
      const rows = state.storage.sql
        .exec<{ n: number }>("SELECT COUNT(*) AS n FROM dk_bridge_executions")
        .one().n;
      return { codes, rows };
    });
    for (const [name, code] of Object.entries(result.codes)) expect(code, name).toBe(INVALID);
    expect(result.rows).toBe(0);
  });

  it("refuses programs that are not source text with bridge/invalid-program", async () => {
    const code = await inFixture(freshFixture(), (instance) =>
      codeOf(() => instance.executor.execute(42 as never)),
    );
    expect(code).toBe("bridge/invalid-program");
  });

  it("refuses malformed module helpers with bridge/invalid-argument", async () => {
    class Job {
      status() {
        return 1;
      }
    }
    expect(await codeOf(() => readOnly(5 as never))).toBe(INVALID);
    expect(await codeOf(() => readOnlyMethods(null as never))).toBe(INVALID);
    expect(await codeOf(() => readOnlyMethods(Job, "nope" as never))).toBe(INVALID);
    expect(await codeOf(() => hostModule(null as never))).toBe(INVALID);
    expect(await codeOf(() => privateModule(7 as never))).toBe(INVALID);
    expect(await codeOf(() => sourceModule(7 as never))).toBe(INVALID);
    expect(await codeOf(() => describeModules(null as never))).toBe(INVALID);
    expect(await codeOf(() => describeModules({}, null as never))).toBe(INVALID);
    expect(await codeOf(() => describeModules({ "node:fs": {} }))).toBe("bridge/invalid-module");
  });

  it("returns null for an execution that does not exist", async () => {
    const record = await inFixture(freshFixture(), (instance) => instance.executor.get("nobody"));
    expect(record).toBeNull();
  });

  it("keeps its schema version as an integer and refuses tables from a newer version", async () => {
    const result = await inFixture(freshFixture(), async (_instance, state) => {
      const version = state.storage.sql
        .exec<{ value: number }>("SELECT value FROM dk_bridge_meta WHERE name = 'schema_version'")
        .one().value;
      state.storage.sql.exec("UPDATE dk_bridge_meta SET value = 99 WHERE name = 'schema_version'");
      const code = await codeOf(
        () => new Executor(anotherInstance(state), { loader: env.LOADER, modules: {} }),
      );
      return { version, code };
    });
    expect(result).toEqual({ version: 4, code: "bridge/schema-too-new" });
  });

  it("renames the meta table's key column of a 0.0 build to the shared convention", async () => {
    const version = await inFixture(freshFixture(), (_instance, state) => {
      const sql = state.storage.sql;
      sql.exec("DROP TABLE dk_bridge_meta");
      sql.exec("CREATE TABLE dk_bridge_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
      sql.exec("INSERT INTO dk_bridge_meta (key, value) VALUES ('schema_version', 1)");
      // The executions table as a 0.0 build (schema version 1) left it.
      for (const column of [
        "seed",
        "fingerprint",
        "interrupt_key",
        "interrupt_payload",
        "journal_size",
        "external_journal",
        "chunked",
      ]) {
        sql.exec(`ALTER TABLE dk_bridge_executions DROP COLUMN ${column}`);
      }
      new Executor(anotherInstance(state), { loader: env.LOADER, modules: {} });
      return sql
        .exec<{ value: number }>("SELECT value FROM dk_bridge_meta WHERE name = 'schema_version'")
        .one().value;
    });
    // Renamed, then migrated forward to the current version (step 2 adds the replay columns, step
    // 3 the chunk rows of long texts, step 4 the index executions are listed by).
    expect(version).toBe(4);
  });

  it("asks for its recovery wake through the object's alarm, earlier-only", async () => {
    const result = await inFixture(freshFixture(), async (instance, state) => {
      const far = Date.now() + 24 * 3600_000;
      await state.storage.setAlarm(far);
      const before = Date.now();
      await instance.executor.execute("export default () => 1;");
      // Give the floating requestWake a turn to land.
      await new Promise((resolve) => setTimeout(resolve, 10));
      const armed = await state.storage.getAlarm();
      return { before, armed, timeout: instance.executor.limits.runTimeoutMs };
    });
    expect(result.armed).not.toBeNull();
    expect(result.armed as number).toBeGreaterThanOrEqual(result.before + result.timeout);
    expect(result.armed as number).toBeLessThan(result.before + result.timeout + 60_000);
  });

  it("reports a throwing event listener and still answers", async () => {
    const result = await inFixture(freshFixture(), async (_instance, state) => {
      const executor = new Executor(anotherInstance(state), {
        loader: env.LOADER,
        modules: {},
        onEvent: () => {
          throw new Error("listener");
        },
      });
      return executor.execute("export default () => 7;");
    });
    expect(result).toMatchObject({ state: "completed", result: 7 });
  });

  it("refuses a second Executor over the same object with bridge/conflict, naming the fix", async () => {
    const result = await inFixture(freshFixture(), async (instance, state) => {
      let caught: unknown;
      try {
        new Executor(state, { loader: env.LOADER, modules: {} });
      } catch (error) {
        caught = error;
      }
      // The object's own executor goes on.
      const still = await instance.executor.execute("export default () => 2;");
      return {
        code: isBridgeError(caught, "bridge/conflict"),
        message: (caught as Error).message,
        still: still.result,
      };
    });
    expect(result.code).toBe(true);
    expect(result.message).toContain(
      "This object already has an Executor: construct parts once, in the constructor (this.executor = new Executor(ctx, { loader: env.LOADER, modules })), and use that one for every request and call.",
    );
    expect(result.still).toBe(2);
  });
});
