import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import {
  encode,
  isJournalError,
  type JournalOutcomeKind,
  type JournalRecord,
  Replayer,
} from "@durablekit/handle-journal";
import { BAD_NAMES, thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import {
  isTasksError,
  type TaskDefinitions,
  type TaskStep,
  type TaskStepJournal,
  type Tasks,
  type TasksOptions,
} from "../src/index";
import type { Fixture } from "./fixtures/worker";
import { inFixture, sleep } from "./helpers";

const CALLS = /dk_tasks_calls/;
const EXECUTION = "exec-1";

/** A recorded call of the execution `exec-1` (or `executionId`) at `key`. */
function call(
  key: string,
  outcome: JournalOutcomeKind = "value",
  payload: string | null = encode(`result ${key}`),
  executionId = EXECUTION,
): JournalRecord {
  return {
    executionId,
    key,
    module: "host:jobs",
    method: "start",
    argsDigest: `digest-${key}`,
    outcome,
    payload,
  };
}

/** The code a call throws: a tasks or journal code, "none", or what else it threw. */
function codeOf(fn: () => unknown): string {
  return thrownCodeSync(
    fn,
    (error): error is { code: string } => isTasksError(error) || isJournalError(error),
  );
}

/** The calls SQLite holds for a run, in recorded order. */
function storedCalls(state: DurableObjectState, runId: string) {
  return state.storage.sql
    .exec<{ journal: string; call_key: string; outcome: string; payload: string | null }>(
      "SELECT journal, call_key, outcome, payload FROM dk_tasks_calls WHERE run_id = ? ORDER BY journal, seq",
      runId,
    )
    .toArray();
}

/**
 * Runs `use` inside the one step of a fresh run, while its attempt holds the run, and returns the
 * settled run's id and result (what `use` returned).
 */
async function inAttempt<T>(
  fixture: Fixture,
  use: (journal: TaskStepJournal, step: TaskStep) => T,
  options: Partial<TasksOptions<TaskDefinitions>> = {},
): Promise<{ runId: string; result: T; tasks: Tasks<TaskDefinitions> }> {
  let result: { value: T } | undefined;
  const tasks = fixture.build(
    {
      "use@v1": async (_input: undefined, step: TaskStep) =>
        step.do("use", { retries: { limit: 1 } }, () => {
          result = { value: use(step.journal("program"), step) };
        }),
    },
    options,
  );
  const { runId } = await tasks.run("use@v1");
  const settled = await fixture.settled(runId, tasks);
  if (settled.state !== "completed" || result === undefined) {
    throw new Error(`run ${runId}: ${JSON.stringify(settled)}`);
  }
  return { runId, result: result.value, tasks };
}

describe("step journals (step.journal)", () => {
  it("records calls and looks them up in recorded order, with seq and recordedAt (kept when given)", async () => {
    await inFixture(async (fixture) => {
      const { result } = await inAttempt(fixture, (journal) => {
        const receipts = ["1", "2", "2.1"].map((key) => journal.record(call(key)));
        journal.record({ ...call("3", "interrupt"), recordedAt: 1_000 });
        const recordedAt = journal.lookup(EXECUTION)[3]?.recordedAt;
        const resolved = journal.resolve(EXECUTION, "3", "value", null, 2_000);
        return { receipts, recordedAt, resolved, entries: journal.lookup(EXECUTION) };
      });
      expect(result.receipts).toEqual([
        { seq: 1, chunks: 0, rowsWritten: 1 },
        { seq: 2, chunks: 0, rowsWritten: 1 },
        { seq: 3, chunks: 0, rowsWritten: 1 },
      ]);
      expect(result.entries).toHaveLength(4);
      expect(result.entries[2]).toEqual({
        ...call("2.1"),
        seq: 3,
        recordedAt: expect.any(Number),
      });
      expect(result.entries.map((entry) => entry.key)).toEqual(["1", "2", "2.1", "3"]);
      // A given recordedAt is kept as given, on record and on resolve.
      expect(result.recordedAt).toBe(1_000);
      expect(result.resolved).toBe(true);
      expect(result.entries[3]).toMatchObject({ seq: 4, outcome: "value", recordedAt: 2_000 });
    });
  });

  it("returns the same journal for the same name in an attempt, and a separate one for another name", async () => {
    await inFixture(async (fixture, state) => {
      const { runId, result } = await inAttempt(fixture, (journal, step) => {
        const again = step.journal("program");
        const other = step.journal("other");
        journal.record(call("1"));
        other.record(call("1", "value", null, "exec-2"));
        return {
          same: again === journal,
          separate: other !== journal,
          program: again.lookup(EXECUTION).length,
          other: other.lookup("exec-2").length,
          names: [journal.name, other.name],
        };
      });
      expect(result).toEqual({
        same: true,
        separate: true,
        program: 1,
        other: 1,
        names: ["program", "other"],
      });
      // A journal name is its own namespace: the step "use" and the journals coexist.
      expect(storedCalls(state, runId).map((row) => [row.journal, row.call_key])).toEqual([
        ["other", "1"],
        ["program", "1"],
      ]);
    });
  });

  it("resolves a pending interrupt or unsafe entry once, and nothing else", async () => {
    await inFixture(async (fixture, state) => {
      const resumed = encode({ approved: true });
      const { runId, result } = await inAttempt(fixture, (journal) => {
        journal.record(call("1"));
        journal.record(call("2", "interrupt", encode("approve?")));
        journal.record(call("3", "unsafe", null));
        return {
          interrupt: journal.resolve(EXECUTION, "2", "value", resumed),
          again: journal.resolve(EXECUTION, "2", "value", resumed),
          settled: journal.resolve(EXECUTION, "1", "error", null),
          unknown: journal.resolve(EXECUTION, "9", "value", null),
          otherExecution: journal.resolve("exec-2", "3", "value", null),
          unsafe: journal.resolve(EXECUTION, "3", "error", encode("gone")),
          entries: journal.lookup(EXECUTION),
        };
      });
      expect(result).toMatchObject({
        interrupt: true,
        again: false,
        settled: false,
        unknown: false,
        otherExecution: false,
        unsafe: true,
      });
      expect(result.entries.map((e) => [e.key, e.seq, e.outcome, e.payload])).toEqual([
        ["1", 1, "value", encode("result 1")],
        ["2", 2, "value", resumed],
        ["3", 3, "error", encode("gone")],
      ]);
      expect(storedCalls(state, runId).map((row) => [row.outcome, row.payload])).toEqual([
        ["value", encode("result 1")],
        ["value", resumed],
        ["error", encode("gone")],
      ]);
    });
  });

  it("writes one row per recorded call and per resolve, in one statement each", async () => {
    await inFixture(async (fixture) => {
      const { result } = await inAttempt(fixture, (journal) => {
        const writes: number[] = [];
        const statements: number[] = [];
        for (let i = 1; i <= 20; i++) {
          const mark = fixture.counter.mark();
          journal.record(call(String(i), i === 20 ? "interrupt" : "value"));
          writes.push(fixture.counter.counts(mark).rowsWritten);
          statements.push(fixture.counter.counts(mark).statements);
        }
        const mark = fixture.counter.mark();
        journal.resolve(EXECUTION, "20", "value", encode("resumed"));
        const resolve = fixture.counter.counts(mark);
        const lookupMark = fixture.counter.mark();
        journal.lookup(EXECUTION);
        return {
          writes,
          statements,
          resolve: [resolve.rowsWritten, resolve.statements],
          lookupStatements: fixture.counter.counts(lookupMark).statements,
        };
      });
      expect(result.writes).toEqual(Array(20).fill(1));
      expect(result.statements).toEqual(Array(20).fill(1));
      expect(result.resolve).toEqual([1, 1]);
      // A lookup is answered from the attempt's loaded journal: no SQL.
      expect(result.lookupStatements).toBe(0);
    });
  });

  it("keeps a run's calls across evictDurableObject and loads them with its steps in one query", async () => {
    const name = `t-${crypto.randomUUID()}`;
    const stub = env.FIXTURE.getByName(name);
    const calls = [call("1"), call("2", "interrupt", encode("approve?")), call("3")];
    const runId = await inFixture(async (fixture, state) => {
      const { runId } = await fixture.tasks.run("journal@v1", { executionId: EXECUTION, calls });
      await fixture.until(runId, (s) => s === "waiting");
      expect(storedCalls(state, runId)).toHaveLength(3);
      return runId;
    }, stub);
    await evictDurableObject(stub);
    await inFixture(async (fixture, state) => {
      const mark = fixture.counter.mark();
      expect(await fixture.tasks.sendEvent(runId, "resume", encode("approved"))).toBe("delivered");
      const done = await fixture.settled(runId);
      expect(done).toMatchObject({ state: "completed", attempt: 2 });
      const { resolved, entries } = (done as { result: { resolved: boolean; entries: [] } }).result;
      expect(resolved).toBe(true);
      expect(
        (entries as Array<{ key: string; outcome: string; payload: string }>).map((e) => [
          e.key,
          e.outcome,
          e.payload,
        ]),
      ).toEqual([
        ["1", "value", encode("result 1")],
        ["2", "value", encode("approved")],
        ["3", "value", encode("result 3")],
      ]);
      // The second attempt found every call, from the run's one journal query.
      expect(fixture.notes()).toEqual([
        { attempt: 1, found: 0 },
        { attempt: 2, found: 3 },
      ]);
      const reads = fixture.counter
        .statements(mark, /dk_tasks_(steps|calls)/)
        .filter((query) => /^\s*SELECT/.test(query));
      expect(reads).toHaveLength(1);
      expect(reads[0]).toMatch(/FROM dk_tasks_steps WHERE run_id = \?1/);
      expect(reads[0]).toMatch(/FROM dk_tasks_calls WHERE run_id = \?1/);
      // The resolve is the attempt's only write of a call row.
      expect(fixture.counter.counts(mark, CALLS).rowsWritten).toBe(1);
      expect(storedCalls(state, runId).map((row) => row.outcome)).toEqual([
        "value",
        "value",
        "value",
      ]);
    }, stub);
  });

  it("refuses a key already recorded with journal/conflict, in the attempt and after a reload", async () => {
    await inFixture(async (fixture, state) => {
      const tasks = fixture.build({
        "twice@v1": async (_input: undefined, step: TaskStep) => {
          const journal = step.journal("program");
          const first = await step.do("first", () => {
            journal.record(call("1"));
            const mark = fixture.counter.mark();
            const code = codeOf(() => journal.record(call("1", "error", null)));
            return { code, written: fixture.counter.counts(mark).rowsWritten };
          });
          await step.sleep("nap", 1);
          // A new attempt, with the journal loaded afresh.
          return {
            first,
            attempt: step.attempt,
            reloaded: codeOf(() => journal.record(call("1", "error", null))),
            entries: journal.lookup(EXECUTION).length,
          };
        },
      });
      const { runId } = await tasks.run("twice@v1");
      const done = await fixture.settled(runId, tasks);
      expect(done).toMatchObject({
        state: "completed",
        result: {
          first: { code: "journal/conflict", written: 0 },
          attempt: 2,
          reloaded: "journal/conflict",
          entries: 1,
        },
      });
      expect(storedCalls(state, runId).map((row) => row.outcome)).toEqual(["value"]);
    });
  });

  it("holds one execution: another execution id is refused with tasks/conflict", async () => {
    await inFixture(async (fixture) => {
      const { result } = await inAttempt(fixture, (journal) => {
        const empty = journal.lookup("exec-2").length;
        journal.record(call("1"));
        return {
          empty,
          lookup: codeOf(() => journal.lookup("exec-2")),
          record: codeOf(() => journal.record(call("2", "value", null, "exec-2"))),
          resolve: journal.resolve("exec-2", "1", "value", null),
          deleted: journal.deleteExecution("exec-2"),
          kept: journal.lookup(EXECUTION).length,
        };
      });
      expect(result).toEqual({
        empty: 0,
        lookup: "tasks/conflict",
        record: "tasks/conflict",
        resolve: false,
        deleted: 0,
        kept: 1,
      });
    });
  });

  it("refuses bad input with tasks/invalid-argument (and a payload over maxValueBytes with tasks/too-large), writing nothing", async () => {
    await inFixture(async (fixture, state) => {
      const { runId, result } = await inAttempt(
        fixture,
        (journal, step) => {
          const mark = fixture.counter.mark();
          const codes: Record<string, string[]> = {
            name: [...BAD_NAMES, "__dk-program"].map((name) =>
              codeOf(() => step.journal(name as string)),
            ),
            executionId: BAD_NAMES.flatMap((id) => [
              codeOf(() => journal.lookup(id as string)),
              codeOf(() => journal.record({ ...call("1"), executionId: id as string })),
              codeOf(() => journal.resolve(id as string, "1", "value", null)),
              codeOf(() => journal.deleteExecution(id as string)),
            ]),
            key: ["", "0", "01", "1.", ".1", "a", "1.x", 3, null].flatMap((key) => [
              codeOf(() => journal.record({ ...call("1"), key: key as string })),
              codeOf(() => journal.resolve(EXECUTION, key as string, "value", null)),
            ]),
            outcome: ["done", "", null, 1].flatMap((outcome) => [
              codeOf(() =>
                journal.record({ ...call("1"), outcome: outcome as JournalOutcomeKind }),
              ),
              codeOf(() => journal.resolve(EXECUTION, "1", outcome as JournalOutcomeKind, null)),
            ]),
            payload: [42, {}, undefined].flatMap((payload) => [
              codeOf(() => journal.record({ ...call("1"), payload: payload as string })),
              codeOf(() => journal.resolve(EXECUTION, "1", "value", payload as string)),
            ]),
            recordedAt: [Number.NaN, Number.POSITIVE_INFINITY, "1", null].flatMap((at) => [
              codeOf(() => journal.record({ ...call("1"), recordedAt: at as number })),
              codeOf(() => journal.resolve(EXECUTION, "1", "value", null, at as number)),
            ]),
            entry: [
              null,
              "call",
              7,
              { ...call("1"), module: 1 },
              { ...call("1"), method: null },
              { ...call("1"), argsDigest: undefined },
            ].map((entry) => codeOf(() => journal.record(entry as unknown as JournalRecord))),
          };
          const tooLarge = [
            codeOf(() => journal.record(call("1", "value", encode("x".repeat(100))))),
            codeOf(() => journal.resolve(EXECUTION, "1", "value", encode("x".repeat(100)))),
          ];
          return { codes, tooLarge, written: fixture.counter.counts(mark).rowsWritten };
        },
        { maxValueBytes: 64 },
      );
      for (const [what, codes] of Object.entries(result.codes)) {
        expect({ what, codes: [...new Set(codes)] }).toEqual({
          what,
          codes: ["tasks/invalid-argument"],
        });
      }
      expect(result.tooLarge).toEqual(["tasks/too-large", "tasks/too-large"]);
      expect(result.written).toBe(0);
      expect(storedCalls(state, runId)).toEqual([]);
    });
  });

  it("closes a journal when its attempt ends: every method then throws tasks/closed", async () => {
    await inFixture(async (fixture) => {
      let taken: TaskStepJournal | undefined;
      const tasks = fixture.build({
        "parks@v1": async (_input: undefined, step: TaskStep) => {
          taken = step.journal("program");
          await step.do("record", () => taken?.record(call("1", "interrupt", null)));
          await step.sleep("nap", 60_000);
        },
      });
      const { runId } = await tasks.run("parks@v1");
      await fixture.until(runId, (s) => s === "waiting");
      const journal = taken as TaskStepJournal;
      expect([
        codeOf(() => journal.lookup(EXECUTION)),
        codeOf(() => journal.record(call("2"))),
        codeOf(() => journal.resolve(EXECUTION, "1", "value", null)),
        codeOf(() => journal.deleteExecution(EXECUTION)),
      ]).toEqual(["tasks/closed", "tasks/closed", "tasks/closed", "tasks/closed"]);
    });
  });

  it("writes nothing once another attempt holds the run, and ends the superseded attempt", async () => {
    await inFixture(async (fixture, state) => {
      let outcome: { code: string; ended: string } | undefined;
      const tasks = fixture.build({
        "usurped@v1": async (_input: undefined, step: TaskStep) => {
          const journal = step.journal("program");
          await step.do("first", () => journal.record(call("1")));
          await step.do("usurped", () => {
            // Another attempt claims the run while this one is inside the step.
            state.storage.sql.exec(
              "UPDATE dk_tasks_runs SET generation = 'usurper' WHERE run_id = ?",
              step.runId,
            );
            const code = codeOf(() => journal.record(call("2")));
            outcome = { code, ended: codeOf(() => journal.lookup(EXECUTION)) };
          });
        },
      });
      const { runId } = await tasks.run("usurped@v1");
      for (let i = 0; i < 200 && outcome === undefined; i++) await sleep(5);
      expect(outcome).toEqual({ code: "tasks/closed", ended: "tasks/closed" });
      expect(storedCalls(state, runId).map((row) => row.call_key)).toEqual(["1"]);
    });
  });

  it("deletes a run's calls with the run: as it completes with retain false, and by delete()", async () => {
    await inFixture(async (fixture, state) => {
      const tasks = fixture.build({
        "records@v1": async (_input: undefined, step: TaskStep) => {
          const journal = step.journal("program");
          await step.do("calls", () => {
            journal.record(call("1"));
            journal.record(call("2"));
          });
          return "done";
        },
      });
      const gone = await tasks.run("records@v1", undefined, { retain: false });
      for (let i = 0; i < 200 && tasks.get(gone.runId); i++) await sleep(5);
      expect(tasks.get(gone.runId)).toBeNull();
      expect(storedCalls(state, gone.runId)).toEqual([]);

      const kept = await tasks.run("records@v1");
      expect(await fixture.settled(kept.runId, tasks)).toMatchObject({ state: "completed" });
      expect(storedCalls(state, kept.runId)).toHaveLength(2);
      expect(tasks.delete()).toBe(1);
      expect(storedCalls(state, kept.runId)).toEqual([]);
    });
  });

  it("deletes an execution's calls in one statement and frees the journal for another", async () => {
    await inFixture(async (fixture) => {
      const { result } = await inAttempt(fixture, (journal) => {
        for (const key of ["1", "2", "3"]) journal.record(call(key));
        const mark = fixture.counter.mark();
        const deleted = journal.deleteExecution(EXECUTION);
        const cost = fixture.counter.counts(mark);
        const old = journal.lookup(EXECUTION).length;
        const next = journal.record(call("1", "value", null, "exec-2"));
        return {
          deleted,
          cost: [cost.statements, cost.rowsWritten],
          old,
          next,
          again: journal.deleteExecution(EXECUTION),
          kept: journal.lookup("exec-2").length,
        };
      });
      expect(result).toEqual({
        deleted: 3,
        cost: [1, 3],
        old: 0,
        next: { seq: 1, chunks: 0, rowsWritten: 1 },
        again: 0,
        kept: 1,
      });
    });
  });

  it("replays a recorded execution through handle-journal's Replayer.load", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "replayed@v1": async (_input: undefined, step: TaskStep) => {
          const journal = step.journal("program");
          await step.do("live", () => {
            journal.record(call("1"));
            journal.record(call("2", "error", encode("boom")));
          });
          await step.sleep("nap", 1);
          // A new attempt: the journal as the bridge would read it to replay the execution.
          const replayer = Replayer.load(journal, EXECUTION);
          const first = replayer.next("1", "host:jobs", "start", "digest-1");
          const second = replayer.next("2", "host:jobs", "start", "digest-2");
          const frontier = replayer.next("3", "host:jobs", "start", "digest-3");
          const diverged = codeOf(() =>
            Replayer.load(journal, EXECUTION).next("1", "host:jobs", "stop", "digest-1"),
          );
          return {
            attempt: step.attempt,
            steps: [first, second, frontier].map((s) =>
              s.status === "replayed" ? [s.status, s.entry.outcome, s.entry.payload] : [s.status],
            ),
            diverged,
            remaining: replayer.remaining,
          };
        },
      });
      const { runId } = await tasks.run("replayed@v1");
      expect(await fixture.settled(runId, tasks)).toMatchObject({
        state: "completed",
        result: {
          attempt: 2,
          steps: [
            ["replayed", "value", encode("result 1")],
            ["replayed", "error", encode("boom")],
            ["caught-up"],
          ],
          diverged: "journal/diverged",
          remaining: 0,
        },
      });
    });
  });
});
