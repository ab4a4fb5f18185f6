import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import {
  childKey,
  DivergenceError,
  decode,
  digestArgs,
  encode,
  encodeError,
  type JournalEntry,
  type JournalError,
  type JournalPort,
  type JournalRecord,
  JournalStore,
  Replayer,
  replayOutcome,
  topLevelKey,
} from "../src/index";
import type { Fixture } from "./fixtures/worker";

let next = 0;
function fixture() {
  return env.FIXTURE.getByName(`journal-${++next}-${Math.random()}`);
}

function call(
  executionId: string,
  key: string,
  method: string,
  args: unknown[],
  result: unknown,
): JournalRecord {
  return {
    executionId,
    key,
    module: "codemode:jobs",
    method,
    argsDigest: digestArgs(args).digest,
    outcome: "value",
    payload: encode(result),
  };
}

describe("JournalStore", () => {
  it("is correct with two stores over one object: one seq per execution, shared (the executor keeps one of its own)", async () => {
    const seqs = await runInDurableObject(fixture(), (instance: Fixture, state) => {
      const other = new JournalStore(state);
      const first = instance.journal.record(call("two", "1", "a", [], 1)).seq;
      const second = other.record(call("two", "2", "b", [], 2)).seq;
      const third = instance.journal.record(call("two", "3", "c", [], 3)).seq;
      return {
        seqs: [first, second, third],
        seen: instance.journal.lookup("two").map((entry) => entry.key),
      };
    });
    expect(seqs).toEqual({ seqs: [1, 2, 3], seen: ["1", "2", "3"] });
  });

  it("keeps entries across an eviction of the Durable Object", async () => {
    const stub = fixture();
    await runInDurableObject(stub, (instance: Fixture) => {
      instance.journal.record(
        call("e1", "1", "createJob", [{ name: "build" }], { id: "j1", at: new Date(5) }),
      );
      instance.journal.record(call("e1", "1.1", "start", [{ ref: "main" }], { runId: "r1" }));
      instance.journal.record({
        ...call("e1", "2", "approval", [], null),
        outcome: "interrupt",
        payload: encode({ reason: "needs approval" }),
      });
    });
    await evictDurableObject(stub);
    const entries = await runInDurableObject(stub, (instance: Fixture) =>
      instance.journal.entries("e1"),
    );
    expect(entries.map((e) => [e.key, e.seq, e.method, e.outcome])).toEqual([
      ["1", 1, "createJob", "value"],
      ["1.1", 2, "start", "value"],
      ["2", 3, "approval", "interrupt"],
    ]);
    expect(decode(entries[0]?.payload as string)).toEqual({ id: "j1", at: new Date(5) });
    // The seq counter continues after the restart instead of starting over.
    const result = await runInDurableObject(stub, (instance: Fixture) =>
      instance.journal.record(call("e1", "3", "status", [], "ok")),
    );
    expect(result.seq).toBe(4);
  });

  it("writes one row per recorded call", async () => {
    const stub = fixture();
    const rows = await runInDurableObject(stub, (instance: Fixture) => {
      const written: number[] = [];
      for (let i = 1; i <= 20; i++) {
        written.push(
          instance.journal.record(call("e", topLevelKey(i), "add", [i, i], i * 2)).rowsWritten,
        );
      }
      return written;
    });
    expect(rows).toEqual(Array.from({ length: 20 }, () => 1));
  });

  it("round-trips a 2 MiB+ payload through chunk rows, in one query", async () => {
    const stub = fixture();
    // Mixed ASCII, 2-, 3- and 4-byte characters so chunk boundaries fall inside multi-unit text.
    const big = "aé€😀".repeat(600_000);
    const payload = encode({ big, at: new Date(1) });
    expect(new TextEncoder().encode(payload).byteLength).toBeGreaterThan(2 * 1024 * 1024);
    const result = await runInDurableObject(stub, (instance: Fixture, state) => {
      instance.journal.record({ ...call("e2", "1", "small", [], 1) });
      const r = instance.journal.record({ ...call("e2", "2", "read", [], null), payload });
      instance.journal.record({ ...call("e2", "3", "small", [], 3) });
      const chunkRows = state.storage.sql
        .exec<{ n: number }>(
          "SELECT COUNT(*) AS n FROM dk_journal_chunks WHERE execution_id = 'e2'",
        )
        .one().n;
      return { ...r, chunkRows };
    });
    expect(result.chunks).toBeGreaterThan(1);
    expect(result.chunkRows).toBe(result.chunks);
    expect(result.rowsWritten).toBe(1 + result.chunks);
    await evictDurableObject(stub);
    const entries = await runInDurableObject(stub, (instance: Fixture) =>
      instance.journal.entries("e2"),
    );
    expect(entries.map((e) => e.key)).toEqual(["1", "2", "3"]);
    const back = decode(entries[1]?.payload as string) as { big: string; at: Date };
    expect(back.big.length).toBe(big.length);
    expect(back.big === big).toBe(true);
    expect(back.at).toEqual(new Date(1));
    expect(decode(entries[2]?.payload as string)).toBe(3);
    const one = await runInDurableObject(
      stub,
      (instance: Fixture) => instance.journal.entry("e2", "2")?.payload,
    );
    expect(one === payload).toBe(true);
  });

  it("refuses to record a key twice, atomically", async () => {
    const stub = fixture();
    const outcome = await runInDurableObject(stub, (instance: Fixture) => {
      instance.journal.record(call("e3", "1", "a", [], 1));
      try {
        instance.journal.record(call("e3", "1", "b", [], 2));
        return "recorded";
      } catch (error) {
        return (error as JournalError).code;
      }
    });
    expect(outcome).toBe("journal/conflict");
    const entries = await runInDurableObject(stub, (instance: Fixture) =>
      instance.journal.entries("e3"),
    );
    expect(entries.map((e) => e.method)).toEqual(["a"]);
  });

  it("deletes a whole execution, chunks included, and leaves the others", async () => {
    const stub = fixture();
    const counts = await runInDurableObject(stub, (_instance: Fixture, state) => {
      const store = new JournalStore(state, { maxChunkBytes: 30 });
      store.record({ ...call("gone", "1", "a", [], "x".repeat(100)) });
      store.record(call("gone", "2", "b", [], 2));
      store.record(call("kept", "1", "a", [], 1));
      const deleted = store.deleteExecution("gone");
      const chunks = state.storage.sql
        .exec<{ n: number }>("SELECT COUNT(*) AS n FROM dk_journal_chunks")
        .one().n;
      return {
        deleted,
        chunks,
        gone: store.entries("gone").length,
        kept: store.entries("kept").length,
      };
    });
    expect(counts).toEqual({ deleted: 2, chunks: 0, gone: 0, kept: 1 });
  });

  it("replaces an interrupt's outcome with the value a resume supplied, once", async () => {
    const stub = fixture();
    const entries = await runInDurableObject(stub, (instance: Fixture) => {
      instance.journal.record({
        ...call("e4", "1", "approval", [], null),
        outcome: "interrupt",
        payload: null,
        recordedAt: 1_000,
      });
      const first = instance.journal.resolve("e4", "1", "value", encode({ approved: true }), 2_000);
      const second = instance.journal.resolve("e4", "1", "value", encode({ approved: false }));
      return { first, second, entries: instance.journal.entries("e4") };
    });
    expect(entries.first).toBe(true);
    expect(entries.second).toBe(false);
    expect(entries.entries[0]).toMatchObject({ outcome: "value", seq: 1, recordedAt: 2_000 });
    expect(decode(entries.entries[0]?.payload as string)).toEqual({ approved: true });
  });

  it("resolves an unsafe marker to its call's outcome, keeping its seq, and nothing else", async () => {
    const stub = fixture();
    const result = await runInDurableObject(stub, (_instance: Fixture, state) => {
      const store = new JournalStore(state, { maxChunkBytes: 30 });
      store.record({ ...call("e5", "1", "charge", [], null), outcome: "unsafe", payload: null });
      store.record(call("e5", "2", "info", [], "done"));
      const marker = store.resolve("e5", "1", "value", encode("c".repeat(100)));
      const settled = store.resolve("e5", "2", "value", encode("again"));
      const unknown = store.resolve("e5", "3", "value", null);
      return { marker, settled, unknown, entries: store.entries("e5") };
    });
    expect(result).toMatchObject({ marker: true, settled: false, unknown: false });
    expect(result.entries.map((e) => [e.key, e.seq, e.outcome])).toEqual([
      ["1", 1, "value"],
      ["2", 2, "value"],
    ]);
    expect(decode(result.entries[0]?.payload as string)).toBe("c".repeat(100));
    expect(decode(result.entries[1]?.payload as string)).toBe("done");
  });

  it("stores the recordedAt a record gives, else its own clock's", async () => {
    const stub = fixture();
    const entries = await runInDurableObject(stub, (_instance: Fixture, state) => {
      const store = new JournalStore(state, { now: () => 77 });
      store.record({ ...call("e6", "1", "a", [], 1), recordedAt: 5 });
      store.record(call("e6", "2", "b", [], 2));
      return store.entries("e6").map((e) => e.recordedAt);
    });
    expect(entries).toEqual([5, 77]);
  });

  it("records its schema version and refuses tables from a newer version", async () => {
    const stub = fixture();
    const result = await runInDurableObject(stub, (_instance: Fixture, state) => {
      const version = state.storage.sql
        .exec<{ value: number }>("SELECT value FROM dk_journal_meta WHERE name = 'schema_version'")
        .one().value;
      state.storage.sql.exec("UPDATE dk_journal_meta SET value = 99 WHERE name = 'schema_version'");
      try {
        new JournalStore(state);
        return { version, code: "none" };
      } catch (error) {
        return { version, code: (error as JournalError).code };
      }
    });
    expect(result).toEqual({ version: 1, code: "journal/schema-too-new" });
  });
});

describe("Replayer", () => {
  async function recordedRun(): Promise<{
    stub: DurableObjectStub<Fixture>;
    entries: JournalEntry[];
  }> {
    const stub = fixture();
    await runInDurableObject(stub, (instance: Fixture) => {
      const j = instance.journal;
      j.record(call("run", "1", "createJob", [{ name: "build" }], { id: "j1" }));
      j.record({
        ...call("run", "1.1", "start", [{ ref: "main" }], null),
        outcome: "handle",
        payload: encode({ $h: 1 }),
      });
      j.record({
        ...call("run", "2", "fails", [1], null),
        outcome: "error",
        payload: encodeError(Object.assign(new RangeError("out of range"), { code: "jobs/range" })),
      });
      j.record(call("run", "1.1.1", "wait", [], { status: "done" }));
    });
    await evictDurableObject(stub);
    const entries = await runInDurableObject(stub, (instance: Fixture) =>
      instance.journal.entries("run"),
    );
    return { stub, entries };
  }

  it("answers the recorded calls in order and reports caught-up at the frontier", async () => {
    const { entries } = await recordedRun();
    const replay = new Replayer(entries);
    const asked: unknown[] = [];
    const ask = (key: string, method: string, args: unknown[]) => {
      const step = replay.next(key, "codemode:jobs", method, digestArgs(args).digest);
      if (step.status === "caught-up") return "live";
      try {
        return replayOutcome(step.entry);
      } catch (error) {
        return error;
      }
    };
    asked.push(ask(topLevelKey(1), "createJob", [{ name: "build" }]));
    asked.push(ask(childKey("1", 1), "start", [{ ref: "main" }]));
    asked.push(ask(topLevelKey(2), "fails", [1]));
    expect(replay.caughtUp).toBe(false);
    asked.push(ask(childKey("1.1", 1), "wait", []));
    expect(replay.remaining).toBe(0);
    asked.push(ask(topLevelKey(3), "next", []));
    expect(asked[0]).toEqual({ id: "j1" });
    expect(asked[1]).toEqual({ $h: 1 });
    expect(asked[2]).toBeInstanceOf(RangeError);
    expect((asked[2] as RangeError & { code: string }).code).toBe("jobs/range");
    expect(asked[3]).toEqual({ status: "done" });
    expect(asked[4]).toBe("live");
    expect(replay.caughtUp).toBe(true);
    expect(replay.frontierKey).toBe("3");
  });

  it("reports divergence when the method at a key changed", async () => {
    const { entries } = await recordedRun();
    const replay = new Replayer(entries);
    replay.next("1", "codemode:jobs", "createJob", digestArgs([{ name: "build" }]).digest);
    let error: unknown;
    try {
      replay.next("1.1", "codemode:jobs", "stop", digestArgs([{ ref: "main" }]).digest);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DivergenceError);
    const d = error as DivergenceError;
    expect(d.code).toBe("journal/diverged");
    expect(d.retryable).toBe(false);
    expect(d.key).toBe("1.1");
    expect(d.expected).toMatch(/^codemode:jobs\.start\(/);
    expect(d.actual).toMatch(/^codemode:jobs\.stop\(/);
    expect(d.message).toContain("call 1.1");
  });

  it("reports divergence when the arguments at a key changed", async () => {
    const { entries } = await recordedRun();
    const replay = new Replayer(entries);
    expect(() =>
      replay.next("1", "codemode:jobs", "createJob", digestArgs([{ name: "deploy" }]).digest),
    ).toThrow(DivergenceError);
    // A Date argument that moved by one millisecond is a different argument.
    const a = digestArgs([new Date(0)]).digest;
    const b = digestArgs([new Date(1)]).digest;
    expect(a).not.toBe(b);
  });

  it("fails a replay that reaches a call recorded as unsafe to repeat", () => {
    const replay = new Replayer([
      {
        ...call("u", "1", "pipe", [], null),
        outcome: "unsafe",
        payload: null,
        seq: 1,
        recordedAt: 0,
      },
    ]);
    let error: unknown;
    try {
      replay.next("1", "codemode:jobs", "pipe", digestArgs([]).digest);
    } catch (e) {
      error = e;
    }
    expect((error as JournalError).code).toBe("journal/unsafe-to-repeat");
  });

  it("replays from any journal port, not only the store", () => {
    const rows: JournalEntry[] = [];
    const port: JournalPort = {
      lookup: (id) => rows.filter((r) => r.executionId === id),
      record: (entry) => {
        const seq = rows.length + 1;
        rows.push({ ...entry, seq, recordedAt: entry.recordedAt ?? 0 });
        return { seq };
      },
      resolve: () => false,
    };
    port.record(call("p", "1", "step", ["a"], "A"));
    const replay = Replayer.load(port, "p");
    const step = replay.next("1", "codemode:jobs", "step", digestArgs(["a"]).digest);
    expect(step.status === "replayed" && replayOutcome(step.entry)).toBe("A");
    expect(replay.next("2", "codemode:jobs", "step", digestArgs(["b"]).digest)).toEqual({
      status: "caught-up",
    });
  });
});
