import type { AlarmPart } from "@durablekit/compose";
import { isDurableKitError } from "@durablekit/compose";
import { describe, expect, it } from "vitest";
import {
  isTasksError,
  TASKS_SCHEMA_VERSION,
  type TaskDefinitions,
  type TaskStep,
  Tasks,
  TasksError,
  type TasksErrorCode,
} from "../src/index";
import { inFixture } from "./helpers";

/** The coded error `fn` throws (or rejects with); fails the test for anything else. */
async function refusal(fn: () => unknown): Promise<TasksError> {
  let thrown: unknown;
  try {
    await fn();
  } catch (error) {
    thrown = error;
  }
  if (thrown === undefined) throw new Error("expected a refusal, got none");
  // A coded TasksError, never a bare Error / RangeError / TypeError of its own.
  expect(isTasksError(thrown)).toBe(true);
  expect(isDurableKitError(thrown)).toBe(true);
  expect(thrown).toBeInstanceOf(TasksError);
  return thrown as TasksError;
}

async function expectCode(code: TasksErrorCode, fn: () => unknown): Promise<void> {
  const error = await refusal(fn);
  expect(error.code).toBe(code);
  expect(isTasksError(error, code)).toBe(true);
  expect(error.retryable).toBe(false);
}

const INVALID = "tasks/invalid-argument";
const LONE_SURROGATE = "run-\uD800";
const TOO_LONG = "x".repeat(257);
const anyTasks = (tasks: Tasks<TaskDefinitions>) =>
  tasks as unknown as Record<string, (...args: unknown[]) => unknown>;

/**
 * Turns the tables of a waiting run back into the layout of schema `version` (the `downgrade`
 * statements), then builds the engine again: it migrates to the current version in place and the
 * run completes.
 */
/** The child-run tables (versions 5 and 6) and version 7's index: dropped to stand for an earlier version. */
const CHILD_TABLES = [
  "DROP TABLE dk_tasks_children",
  "DROP TABLE dk_tasks_child_waits",
  "DROP TABLE dk_tasks_links",
  "DROP TABLE dk_tasks_outbox",
  // Version 7's index of running runs (recovery on a new instance's first wake).
  "DROP INDEX dk_tasks_runs_running",
];

/** Version 8's indexes of runs by state and by definition: dropped to stand for any earlier version. */
/** What version 12 added (triggers): undone for every older version tested. */
const SINCE_V12 = ["DROP TABLE dk_tasks_triggers"];

/** What versions 11 and 12 added (flow control, schedules, triggers): undone for every older version tested. */
const SINCE_V11 = [
  ...SINCE_V12,
  "DROP INDEX dk_tasks_runs_by_flow",
  "ALTER TABLE dk_tasks_runs DROP COLUMN flow_key",
  "ALTER TABLE dk_tasks_runs DROP COLUMN priority",
  "ALTER TABLE dk_tasks_runs DROP COLUMN queue_seq",
  "ALTER TABLE dk_tasks_runs DROP COLUMN queued_for",
  "DROP TABLE dk_tasks_flows",
  "DROP TABLE dk_tasks_schedules",
];

/** What versions 10 and 11 added: undone for every older version tested. */
const SINCE_V10 = [
  ...SINCE_V11,
  "DROP TABLE dk_tasks_run_log",
  "ALTER TABLE dk_tasks_steps DROP COLUMN ev",
  "ALTER TABLE dk_tasks_dropped_steps DROP COLUMN ev",
  "ALTER TABLE dk_tasks_runs DROP COLUMN compensable",
];

/** What versions 8 to 10 added beside the runs table: undone for every older version tested. */
const SINCE_V8 = [
  ...SINCE_V10,
  "DROP INDEX dk_tasks_runs_by_state",
  "DROP INDEX dk_tasks_runs_by_definition",
  "DROP TABLE dk_tasks_restarts",
  "DROP TABLE dk_tasks_dropped_steps",
];

/** The child-run tables as version 5 left them (messages of protocol version 1, no secrets). */
const V5_CHILD_TABLES = [
  `CREATE TABLE dk_tasks_children (parent_run_id TEXT NOT NULL, child_run_id TEXT NOT NULL,
     step TEXT NOT NULL, target TEXT NOT NULL, state TEXT NOT NULL, result TEXT, error TEXT,
     settled_at INTEGER, wait_step TEXT, PRIMARY KEY (parent_run_id, child_run_id)) WITHOUT ROWID`,
  `CREATE TABLE dk_tasks_child_waits (run_id TEXT NOT NULL, step TEXT NOT NULL,
     children TEXT NOT NULL, remaining INTEGER NOT NULL, PRIMARY KEY (run_id, step)) WITHOUT ROWID`,
  `CREATE TABLE dk_tasks_parents (child_run_id TEXT NOT NULL PRIMARY KEY, parent TEXT NOT NULL,
     parent_run_id TEXT NOT NULL, key TEXT NOT NULL) WITHOUT ROWID`,
  `CREATE TABLE dk_tasks_outbox (id TEXT NOT NULL PRIMARY KEY, target TEXT NOT NULL,
     message TEXT NOT NULL, attempts INTEGER NOT NULL, next_at INTEGER NOT NULL,
     created_at INTEGER NOT NULL) WITHOUT ROWID`,
  "CREATE INDEX dk_tasks_outbox_next ON dk_tasks_outbox (next_at)",
  `INSERT INTO dk_tasks_outbox VALUES ('settled:c1', '{}', '{"v":1}', 0, 0, 0)`,
];

async function expectMigratedInPlace(
  version: number,
  downgrade: string[],
  attempts: Array<[number, string]> = [[2, "completed"]],
  recreate: string[] = [],
  since: string[] = SINCE_V8,
): Promise<void> {
  await inFixture(async (fixture, state) => {
    const { runId } = await fixture.tasks.run("sleepy@v1", { ms: 50 });
    await fixture.until(runId, (s) => s === "waiting");
    // Version 6 has the child-run tables of today; earlier versions had none, or version 5's.
    const childTables = version >= 6 ? [] : CHILD_TABLES;
    for (const statement of [...since, ...downgrade, ...childTables, ...recreate]) {
      state.storage.sql.exec(statement);
    }
    state.storage.sql.exec(
      "UPDATE dk_tasks_meta SET value = ? WHERE name = 'schema_version'",
      version,
    );
    const tasks = fixture.build(fixture.definitions());
    expect(
      state.storage.sql
        .exec<{ value: number }>("SELECT value FROM dk_tasks_meta WHERE name = 'schema_version'")
        .one().value,
    ).toBe(TASKS_SCHEMA_VERSION);
    expect(TASKS_SCHEMA_VERSION).toBe(12);
    // A version-1 exchange cannot be proven: its messages are not carried over.
    expect(
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_outbox").one().n,
    ).toBe(0);
    expect(
      state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_calls").one().n,
    ).toBe(0);
    expect(await fixture.settled(runId, tasks)).toMatchObject({
      state: "completed",
      result: "woke",
    });
    // Before version 4 the attempt before the migration left no row; the one after it is recorded.
    expect(tasks.attempts(runId)?.map((a) => [a.attempt, a.outcome])).toEqual(attempts);
    // Before version 10 the run's events are those written since the migration, numbered from 0;
    // from version 10 on they go on from the ones written before it.
    const events = tasks.events.readPage(runId).chunks.map(({ chunk }) => chunk);
    const first = version >= 10 ? (events.length > 3 ? (events.at(-3)?.seq as number) : 0) : 0;
    expect(events.slice(version >= 10 ? -3 : 0).map((e) => [e.seq, e.type])).toEqual([
      [first, "task:attempt:started"],
      [first + 1, "task:step:completed"],
      [first + 2, "task:completed"],
    ]);
    if (version >= 10) expect(events[0]?.type).toBe("task:accepted");
  });
}

describe("bad input", () => {
  it("is a type-level AlarmPart", () => {
    // Compiles only while Tasks satisfies the one part interface of docs/composing.md.
    const check = (tasks: Tasks): AlarmPart => tasks;
    expect(typeof check).toBe("function");
  });

  it("refuses a bad constructor argument or option with tasks/invalid-argument", async () => {
    await inFixture(async (fixture, state) => {
      const ok = { definitions: { "a@v1": async () => 1 } };
      const construct = (ctx: unknown, options: unknown) => () =>
        new Tasks(ctx as DurableObjectState, options as never);
      await expectCode(INVALID, construct(undefined, ok));
      await expectCode(INVALID, construct({}, ok));
      await expectCode(INVALID, construct(state, undefined));
      await expectCode(INVALID, construct(state, "definitions"));
      await expectCode(INVALID, construct(state, { definitions: null }));
      await expectCode(INVALID, construct(state, { definitions: { "": async () => 1 } }));
      await expectCode(INVALID, construct(state, { definitions: { [TOO_LONG]: async () => 1 } }));
      await expectCode(
        INVALID,
        construct(state, { definitions: { [LONE_SURROGATE]: async () => 1 } }),
      );
      await expectCode(INVALID, construct(state, { definitions: { "__dk.x": async () => 1 } }));
      await expectCode(INVALID, construct(state, { definitions: { "a@v1": "not a function" } }));
      for (const bad of [
        { claimTimeoutMs: -1 },
        { claimTimeoutMs: "3 seconds" },
        { claimTimeoutMs: Number.NaN },
        { stepTimeoutMs: Number.POSITIVE_INFINITY },
        { retries: { limit: 0 } },
        { retries: { limit: 1.5 } },
        { retries: { delayMs: -5 } },
        { retries: { delayMs: "1 second" } },
        { retries: { backoff: "random" } },
        { retries: "often" },
        { maxValueBytes: 0 },
        { maxValueBytes: 1.5 },
        { maxStepsPerRun: -1 },
        { maxAttemptsWithoutProgress: 0 },
        { maxAttemptsWithoutProgress: 2.5 },
        { maxAttemptsWithoutProgress: "3" },
        { onEvent: "log" },
        { onError: 42 },
        { now: 1234 },
      ]) {
        await expectCode(INVALID, construct(state, { ...ok, ...bad }));
      }
      expect(fixture.tasks).toBeInstanceOf(Tasks);
    });
  });

  it("refuses bad arguments to every public method with a coded error, writing nothing", async () => {
    await inFixture(async (fixture) => {
      const tasks = anyTasks(fixture.tasks as unknown as Tasks<TaskDefinitions>);
      const call =
        (method: string, ...args: unknown[]) =>
        () =>
          (tasks[method] as (...a: unknown[]) => unknown).apply(fixture.tasks, args);

      // run()
      await expectCode(INVALID, call("run", ""));
      await expectCode(INVALID, call("run", 42));
      await expectCode(INVALID, call("run", TOO_LONG));
      await expectCode("tasks/unknown-definition", call("run", "nope@v1"));
      await expectCode(INVALID, call("run", "steps@v1", { n: 1 }, "options"));
      await expectCode(INVALID, call("run", "steps@v1", { n: 1 }, { runId: "" }));
      await expectCode(INVALID, call("run", "steps@v1", { n: 1 }, { runId: LONE_SURROGATE }));
      await expectCode(INVALID, call("run", "steps@v1", { n: 1 }, { runId: 7 }));
      await expectCode(INVALID, call("run", "steps@v1", { n: 1 }, { idempotencyKey: TOO_LONG }));
      await expectCode(INVALID, call("run", "steps@v1", { n: 1 }, { retain: "no" }));
      await expectCode("tasks/unserializable", call("run", "steps@v1", { f: () => 1 }));
      await expectCode(
        "tasks/unserializable",
        call("run", "steps@v1", { n: 1 }, { metadata: Symbol("m") }),
      );
      let deep: unknown = 1;
      for (let i = 0; i < 200; i++) deep = [deep];
      await expectCode("tasks/too-deep", call("run", "steps@v1", deep));
      const small = fixture.build(fixture.definitions(), { maxValueBytes: 64 });
      await expectCode("tasks/too-large", () =>
        small.run("steps@v1", { n: 1, pad: "x".repeat(100) } as never),
      );

      // handle()
      await expectCode(INVALID, call("handle", ""));
      await expectCode("tasks/unknown-definition", call("handle", "nope@v1"));
      const handle = fixture.tasks.handle("steps@v1");
      await expectCode(INVALID, () => handle.get(""));
      await expectCode(INVALID, () => handle.getByIdempotencyKey(TOO_LONG));
      await expectCode(INVALID, () => handle.cancel(LONE_SURROGATE));
      await expectCode(INVALID, () => handle.run({ n: 1 }, { runId: "" }));

      // get(), getByIdempotencyKey(), steps()
      for (const bad of ["", TOO_LONG, LONE_SURROGATE, 42, undefined, null]) {
        await expectCode(INVALID, call("get", bad));
        await expectCode(INVALID, call("getByIdempotencyKey", bad));
        await expectCode(INVALID, call("steps", bad));
        await expectCode(INVALID, call("cancel", bad));
        await expectCode(INVALID, call("sendEvent", bad, "type"));
      }

      // list()
      for (const bad of [
        "all",
        { limit: 0 },
        { limit: 1_001 },
        { limit: 2.5 },
        { state: "done" },
        { state: ["waiting", "sleeping"] },
        { definition: "" },
        { cursor: "not-a-token" },
        { cursor: 12 },
      ]) {
        await expectCode(INVALID, call("list", bad));
      }

      // cancel() with a bad reason
      await expectCode(INVALID, call("cancel", "r1", 42));

      // delete()
      for (const bad of [
        "everything",
        { state: ["waiting"] },
        { state: "completed" },
        { limit: 0 },
        { settledBefore: "yesterday" },
        { settledBefore: new Date(Number.NaN) },
      ]) {
        await expectCode(INVALID, call("delete", bad));
      }

      // sendEvent()
      await expectCode("tasks/not-found", call("sendEvent", "nobody", "approve"));
      const { runId } = await fixture.tasks.run("approval@v1", {});
      await expectCode(INVALID, call("sendEvent", runId, ""));
      await expectCode(INVALID, call("sendEvent", runId, TOO_LONG));
      await expectCode(
        "tasks/unserializable",
        call("sendEvent", runId, "approve", () => 1),
      );
      await fixture.tasks.cancel(runId);
      await expectCode("tasks/closed", call("sendEvent", runId, "approve", {}));

      // Nothing was accepted but the one run this test started itself.
      expect(fixture.tasks.list().items.map((run) => run.runId)).toEqual([runId]);
    });
  });

  it("refuses bad step arguments inside a handler with coded errors", async () => {
    await inFixture(async (fixture) => {
      const codes: Record<string, string> = {};
      const attempt = async (label: string, fn: () => Promise<unknown>) => {
        try {
          await fn();
          codes[label] = "none";
        } catch (error) {
          codes[label] = isTasksError(error) ? error.code : `bare ${(error as Error).name}`;
        }
      };
      const tasks = fixture.build({
        "bad-steps@v1": async (_input: undefined, step: TaskStep) => {
          const loose = step as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
          await attempt("do: empty name", () => step.do("", () => 1));
          await attempt("do: reserved name", () => step.do("__dk.x", () => 1));
          await attempt("do: no callback", () => loose.do?.("no-fn") as Promise<unknown>);
          await attempt(
            "do: bad options",
            () => loose.do?.("bad-options", "fast", () => 1) as Promise<unknown>,
          );
          await attempt("do: bad timeoutMs", () =>
            step.do("bad-timeout", { timeoutMs: -1 }, () => 1),
          );
          await attempt("do: bad retries", () =>
            step.do("bad-retries", { retries: { limit: 0 } }, () => 1),
          );
          await attempt("sleep: bad ms", () => step.sleep("bad-sleep", "1 day" as never));
          await attempt("sleep: negative ms", () => step.sleep("neg-sleep", -1));
          await attempt("sleepUntil: bad time", () => step.sleepUntil("bad-until", Number.NaN));
          await attempt(
            "waitForEvent: no options",
            () => loose.waitForEvent?.("no-options") as Promise<unknown>,
          );
          await attempt("waitForEvent: empty type", () =>
            step.waitForEvent("empty-type", { type: "" }),
          );
          await attempt("waitForEvent: bad timeoutMs", () =>
            step.waitForEvent("bad-wait", { type: "t", timeoutMs: "soon" as never }),
          );
          return "done";
        },
      });
      const { runId } = await tasks.run("bad-steps@v1");
      expect(await fixture.settled(runId, tasks)).toMatchObject({
        state: "completed",
        result: "done",
      });
      expect(codes).toEqual({
        "do: empty name": INVALID,
        "do: reserved name": INVALID,
        "do: no callback": INVALID,
        "do: bad options": INVALID,
        "do: bad timeoutMs": INVALID,
        "do: bad retries": INVALID,
        "sleep: bad ms": INVALID,
        "sleep: negative ms": INVALID,
        "sleepUntil: bad time": INVALID,
        "waitForEvent: no options": INVALID,
        "waitForEvent: empty type": INVALID,
        "waitForEvent: bad timeoutMs": INVALID,
      });
    });
  });

  it("migrates schema version 1 tables in place, keeping their runs", async () => {
    // The tables as version 1 left them: no breaker columns, no step journal table.
    await expectMigratedInPlace(1, [
      "ALTER TABLE dk_tasks_runs DROP COLUMN progress",
      "ALTER TABLE dk_tasks_runs DROP COLUMN stalls",
      "DROP TABLE dk_tasks_calls",
      "DROP TABLE dk_tasks_attempts",
      "ALTER TABLE dk_tasks_runs DROP COLUMN attempt_started_at",
      "ALTER TABLE dk_tasks_runs DROP COLUMN trace",
    ]);
  });

  it("migrates schema version 2 tables in place, adding the step journal table", async () => {
    // The tables as version 2 left them: no step journal table.
    await expectMigratedInPlace(2, [
      "DROP TABLE dk_tasks_calls",
      "DROP TABLE dk_tasks_attempts",
      "ALTER TABLE dk_tasks_runs DROP COLUMN attempt_started_at",
      "ALTER TABLE dk_tasks_runs DROP COLUMN trace",
    ]);
  });

  it("migrates schema version 3 tables in place, adding the attempts table", async () => {
    // The tables as version 3 left them: no attempts table. A run claimed before has no attempt rows.
    await expectMigratedInPlace(3, [
      "DROP TABLE dk_tasks_attempts",
      "ALTER TABLE dk_tasks_runs DROP COLUMN attempt_started_at",
      "ALTER TABLE dk_tasks_runs DROP COLUMN trace",
    ]);
  });

  it("migrates schema version 4 tables in place, adding the child-run tables", async () => {
    // The tables as version 4 left them: no child-run tables.
    await expectMigratedInPlace(
      4,
      [],
      [
        [1, "sleep"],
        [2, "completed"],
      ],
    );
  });

  it("migrates schema version 5 tables in place, replacing the child-run tables of message version 1", async () => {
    await expectMigratedInPlace(
      5,
      [],
      [
        [1, "sleep"],
        [2, "completed"],
      ],
      V5_CHILD_TABLES,
    );
  });

  it("migrates schema version 6 tables in place, adding the index of running runs", async () => {
    await expectMigratedInPlace(
      6,
      ["DROP INDEX dk_tasks_runs_running"],
      [
        [1, "sleep"],
        [2, "completed"],
      ],
    );
  });

  it("migrates schema version 7 tables in place, adding the indexes of runs by state and definition", async () => {
    await expectMigratedInPlace(
      7,
      [],
      [
        [1, "sleep"],
        [2, "completed"],
      ],
    );
  });

  it("migrates schema version 8 tables in place, copying the runs table for the paused state", async () => {
    await expectMigratedInPlace(
      8,
      [],
      [
        [1, "sleep"],
        [2, "completed"],
      ],
      [
        "CREATE INDEX dk_tasks_runs_by_state ON dk_tasks_runs (state, created_at, run_id)",
        "CREATE INDEX dk_tasks_runs_by_definition ON dk_tasks_runs (definition, state, created_at, run_id)",
      ],
    );
  });

  it("migrates schema version 9 tables in place, adding the run's event log", async () => {
    await expectMigratedInPlace(
      9,
      [],
      [
        [1, "sleep"],
        [2, "completed"],
      ],
      [],
      SINCE_V10,
    );
  });

  it("migrates schema version 10 tables in place, adding flow control and schedules", async () => {
    await expectMigratedInPlace(
      10,
      [],
      [
        [1, "sleep"],
        [2, "completed"],
      ],
      [],
      SINCE_V11,
    );
  });

  it("migrates schema version 11 tables in place, adding triggers", async () => {
    await expectMigratedInPlace(
      11,
      [],
      [
        [1, "sleep"],
        [2, "completed"],
      ],
      [],
      SINCE_V12,
    );
  });

  it("refuses tables written by a newer version with tasks/schema-too-new", async () => {
    await inFixture(async (fixture, state) => {
      state.storage.sql.exec("UPDATE dk_tasks_meta SET value = 99 WHERE name = 'schema_version'");
      await expectCode("tasks/schema-too-new", () => fixture.build(fixture.definitions()));
      state.storage.sql.exec(
        "UPDATE dk_tasks_meta SET value = ? WHERE name = 'schema_version'",
        TASKS_SCHEMA_VERSION,
      );
    });
  });
});
