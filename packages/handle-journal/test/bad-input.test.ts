import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import {
  childKey,
  compareKeys,
  createReviver,
  decode,
  digestArgs,
  digestText,
  encode,
  encodedSize,
  fromErrorRecord,
  handleRecord,
  isJournalError,
  type JournalEvent,
  JournalStore,
  parentKey,
  parseKey,
  Replayer,
  replayOutcome,
  topLevelKey,
} from "../src/index";
import type { Fixture } from "./fixtures/worker";

let next = 0;
function fixture() {
  return env.FIXTURE.getByName(`bad-input-${++next}-${Math.random()}`);
}

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isJournalError);

const INVALID = "journal/invalid-argument";

function valid(extra: Record<string, unknown> = {}) {
  return {
    executionId: "e",
    key: "1",
    module: "m",
    method: "f",
    argsDigest: "d",
    outcome: "value",
    payload: encode(1),
    ...extra,
  } as never;
}

describe("bad input", () => {
  it("refuses malformed call keys and ordinals with journal/invalid-argument", () => {
    expect(codeOf(() => topLevelKey(0))).toBe(INVALID);
    expect(codeOf(() => topLevelKey("1" as never))).toBe(INVALID);
    expect(codeOf(() => childKey("x", 1))).toBe(INVALID);
    expect(codeOf(() => childKey("1", 1.5))).toBe(INVALID);
    expect(codeOf(() => parseKey(7 as never))).toBe(INVALID);
    expect(codeOf(() => parseKey(""))).toBe(INVALID);
    expect(codeOf(() => parentKey(null as never))).toBe(INVALID);
    expect(codeOf(() => compareKeys("1", {} as never))).toBe(INVALID);
  });

  it("refuses malformed codec options and inputs with coded errors", () => {
    expect(codeOf(() => encode(1, { maxValueBytes: -1 }))).toBe(INVALID);
    expect(codeOf(() => encode(1, { maxValueBytes: "10" as never }))).toBe(INVALID);
    expect(codeOf(() => encode(1, { maxDepth: "x" as never }))).toBe(INVALID);
    expect(codeOf(() => encode(1, { path: 3 as never }))).toBe(INVALID);
    expect(codeOf(() => encode(1, { handleKind: "codemode:jobs#Run" as never }))).toBe(INVALID);
    expect(codeOf(() => encode(1, null as never))).toBe(INVALID);
    expect(codeOf(() => encodedSize(1, { maxValueBytes: Number.NaN }))).toBe(INVALID);
    expect(codeOf(() => encode(Symbol("s")))).toBe("journal/unserializable");
    expect(codeOf(() => encode("x".repeat(100), { maxValueBytes: 10 }))).toBe("journal/too-large");
    expect(codeOf(() => digestArgs([() => 1]))).toBe("journal/unserializable");
    expect(codeOf(() => digestText(1 as never))).toBe(INVALID);
    expect(codeOf(() => decode(undefined as never))).toBe("journal/corrupt");
    expect(codeOf(() => decode(12 as never))).toBe("journal/corrupt");
    expect(codeOf(() => decode("{"))).toBe("journal/corrupt");
    expect(codeOf(() => fromErrorRecord(null as never))).toBe(INVALID);
    expect(codeOf(() => fromErrorRecord({ nope: 1 } as never))).toBe(INVALID);
  });

  it("refuses malformed handle kinds, modules and records", () => {
    expect(codeOf(() => handleRecord("", "Run", 1))).toBe(INVALID);
    expect(codeOf(() => handleRecord("m", "a#b", 1))).toBe(INVALID);
    expect(codeOf(() => handleRecord(1 as never, "Run", 1))).toBe(INVALID);
    expect(codeOf(() => createReviver(null as never))).toBe(INVALID);
    expect(codeOf(() => createReviver({})(null as never))).toBe(INVALID);
    expect(codeOf(() => createReviver({})({ $handle: "m#Run", value: 1 }))).toBe(
      "journal/no-reviver",
    );
  });

  it("refuses malformed replayer and replay input", () => {
    expect(codeOf(() => new Replayer(null as never))).toBe(INVALID);
    expect(codeOf(() => new Replayer(5 as never))).toBe(INVALID);
    expect(codeOf(() => new Replayer([null] as never))).toBe(INVALID);
    expect(codeOf(() => Replayer.load(null as never, "e"))).toBe(INVALID);
    expect(codeOf(() => new Replayer([]).next(1 as never, "m", "f", "d"))).toBe(INVALID);
    const twice = new Replayer([]);
    twice.next("1", "m", "f", "d");
    expect(codeOf(() => twice.next("1", "m", "f", "d"))).toBe("journal/conflict");
    expect(codeOf(() => replayOutcome(null as never))).toBe(INVALID);
    expect(codeOf(() => replayOutcome({} as never))).toBe(INVALID);
  });

  it("refuses malformed store options and writes nothing for malformed records", async () => {
    const stub = fixture();
    const result = await runInDurableObject(stub, (instance: Fixture, state) => {
      const codes: Record<string, string> = {
        ctx: codeOf(() => new JournalStore(null as never)),
        storage: codeOf(() => new JournalStore(state.storage as never)),
        options: codeOf(() => new JournalStore(state, 5 as never)),
        chunkSmall: codeOf(() => new JournalStore(state, { maxChunkBytes: 5 })),
        chunkFraction: codeOf(() => new JournalStore(state, { maxChunkBytes: 10.5 })),
        now: codeOf(() => new JournalStore(state, { now: 5 as never })),
        onEvent: codeOf(() => new JournalStore(state, { onEvent: "x" as never })),
        recordNull: codeOf(() => instance.journal.record(null as never)),
        recordEmptyId: codeOf(() => instance.journal.record(valid({ executionId: "" }))),
        recordLongId: codeOf(() =>
          instance.journal.record(valid({ executionId: "x".repeat(257) })),
        ),
        recordSurrogate: codeOf(() => instance.journal.record(valid({ executionId: "\uD800" }))),
        recordKey: codeOf(() => instance.journal.record(valid({ key: "0" }))),
        recordOutcome: codeOf(() => instance.journal.record(valid({ outcome: "done" }))),
        recordPayload: codeOf(() => instance.journal.record(valid({ payload: 5 }))),
        recordModule: codeOf(() => instance.journal.record(valid({ module: undefined }))),
        entries: codeOf(() => instance.journal.entries(5 as never)),
        lookup: codeOf(() => instance.journal.lookup("" as never)),
        entryId: codeOf(() => instance.journal.entry(undefined as never, "1")),
        entryKey: codeOf(() => instance.journal.entry("e", "1.")),
        resolveKey: codeOf(() => instance.journal.resolve("e", "x", "value", null)),
        resolveOutcome: codeOf(() => instance.journal.resolve("e", "1", "nope" as never, null)),
        resolvePayload: codeOf(() => instance.journal.resolve("e", "1", "value", {} as never)),
        deleteExecution: codeOf(() => instance.journal.deleteExecution(null as never)),
      };
      const rows = state.storage.sql
        .exec<{ n: number }>("SELECT COUNT(*) AS n FROM dk_journal_entries")
        .one().n;
      return { codes, rows };
    });
    for (const [name, code] of Object.entries(result.codes)) expect(code, name).toBe(INVALID);
    expect(result.rows).toBe(0);
  });

  it("returns null for an entry that is not recorded", async () => {
    const stub = fixture();
    const entry = await runInDurableObject(stub, (instance: Fixture) =>
      instance.journal.entry("nobody", "1"),
    );
    expect(entry).toBeNull();
  });

  it("emits journal events and survives a throwing listener", async () => {
    const stub = fixture();
    const events = await runInDurableObject(stub, (_instance: Fixture, state) => {
      const seen: JournalEvent[] = [];
      const store = new JournalStore(state, { onEvent: (event) => seen.push(event) });
      store.record(valid({ executionId: "ev", outcome: "interrupt", payload: null }));
      store.resolve("ev", "1", "value", encode(2));
      store.deleteExecution("ev");
      const throwing = new JournalStore(state, {
        onEvent: () => {
          throw new Error("listener");
        },
      });
      const recorded = throwing.record(valid({ executionId: "ev2" }));
      return { types: seen.map((e) => e.type), first: seen[0], seq: recorded.seq };
    });
    expect(events.types).toEqual([
      "journal:recorded",
      "journal:resolved",
      "journal:execution-deleted",
    ]);
    expect(events.first).toEqual({
      type: "journal:recorded",
      executionId: "ev",
      key: "1",
      seq: 1,
      outcome: "interrupt",
      chunks: 0,
    });
    expect(events.seq).toBe(1);
  });

  it("keeps every chunk row within maxChunkBytes of UTF-8", async () => {
    const stub = fixture();
    const sizes = await runInDurableObject(stub, (_instance: Fixture, state) => {
      const store = new JournalStore(state, { maxChunkBytes: 30 });
      store.record(valid({ executionId: "c", payload: encode("aé€😀".repeat(40)) }));
      return state.storage.sql
        .exec<{ data: string }>("SELECT data FROM dk_journal_chunks WHERE execution_id = 'c'")
        .toArray()
        .map((row) => new TextEncoder().encode(row.data).byteLength);
    });
    expect(sizes.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(30);
  });
});
