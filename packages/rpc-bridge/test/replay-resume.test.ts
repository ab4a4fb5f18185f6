import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { JournalStore } from "@durablekit/handle-journal";
import { thrownCode } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isBridgeError } from "../src/index";
import { freshReplay, inReplay, storedCounters } from "./helpers";

const APPROVE = `
  import { approval, echo } from "test:replay";
  export default async function () {
    await echo("before");
    const answer = await approval("ok?");
    return { answer, after: await echo("after") };
  }
`;

describe("replay: interrupt and resume", () => {
  it("answers the interrupted call with the resume value without running its host function again", async () => {
    const stub = freshReplay();
    const first = await inReplay(stub, (i) =>
      i.executor.execute(APPROVE, undefined, { id: "r-1" }),
    );
    expect(first).toMatchObject({
      state: "interrupted",
      interrupt: { key: "2", payload: { reason: "ok?" } },
    });
    await evictDurableObject(stub);
    const done = await inReplay(stub, (i) => i.executor.resume("r-1", { approved: "yes" }));
    expect(done).toEqual({
      executionId: "r-1",
      state: "completed",
      result: { answer: { approved: "yes" }, after: "after" },
    });
    expect(await storedCounters(stub)).toMatchObject({ approvals: 1, echoes: 2 });
  });

  it("refuses to resume an unknown id, a running or finished run, a second time, and a value that is not data", async () => {
    const stub = freshReplay();
    await inReplay(stub, (i) => i.executor.execute(APPROVE, undefined, { id: "r-2" }));
    const codes = await inReplay(stub, async (i) => {
      const guard = isBridgeError as (e: unknown) => e is { code: string };
      const unknown = await thrownCode(() => i.executor.resume("nobody", 1), guard);
      const notData = await thrownCode(() => i.executor.resume("r-2", () => 1), guard);
      const tooLarge = await thrownCode(
        () => i.executor.resume("r-2", "x".repeat(2_000_000)),
        guard,
      );
      const first = i.executor.resume("r-2", { approved: true });
      const whileRunning = await thrownCode(() => i.executor.resume("r-2", 2), guard);
      const ended = await first;
      const finished = await thrownCode(() => i.executor.resume("r-2", 3), guard);
      const badId = await thrownCode(() => i.executor.resume(5 as never, 3), guard);
      return { unknown, notData, tooLarge, whileRunning, finished, badId, ended: ended.state };
    });
    expect(codes).toEqual({
      unknown: "bridge/not-found",
      notData: "bridge/unserializable",
      tooLarge: "bridge/too-large",
      whileRunning: "bridge/conflict",
      finished: "bridge/conflict",
      badId: "bridge/invalid-argument",
      ended: "completed",
    });
    expect((await storedCounters(stub)).approvals).toBe(1);
  });

  it("re-attaches execute with an existing id and a journal instead of refusing it", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      const journal = new JournalStore(state);
      const first = await i.executor.execute(APPROVE, undefined, { id: "r-3", journal });
      const again = await i.executor.execute(APPROVE, undefined, { id: "r-3", journal });
      const withoutJournal = await i.executor.execute(APPROVE, undefined, { id: "r-3" }).then(
        () => "ran",
        (e: { code: string }) => e.code,
      );
      const done = await i.executor.resume("r-3", true, { journal });
      const ended = await i.executor.execute(APPROVE, undefined, { id: "r-3", journal });
      return { first, again, withoutJournal, done, ended };
    });
    expect(out.first.state).toBe("interrupted");
    expect(out.again).toEqual(out.first);
    expect(out.withoutJournal).toBe("bridge/conflict");
    expect(out.done).toMatchObject({ state: "completed", result: { answer: true } });
    expect(out.ended).toEqual(out.done);
    expect(await storedCounters(stub)).toMatchObject({ approvals: 1, echoes: 2 });
  });

  it("lets calls in flight finish and be journaled, and holds calls made after the interrupt, which run once after resume", async () => {
    const stub = freshReplay();
    const first = await inReplay(stub, (i) =>
      i.executor.execute(
        `import { approval, slow, echo } from "test:replay";
         export default async function () {
           const pending = slow(150);
           const asked = approval("go?");
           const held = echo("held");
           return { slow: await pending, answer: await asked, held: await held };
         }`,
        undefined,
        { id: "r-4" },
      ),
    );
    expect(first).toMatchObject({ state: "interrupted", interrupt: { key: "2" } });
    const during = await storedCounters(stub);
    expect(during).toMatchObject({ slowStarts: 1, slowEnds: 1, approvals: 1 });
    expect(during.echoes).toBeUndefined();
    const entries = await inReplay(stub, (_i, state) =>
      new JournalStore(state).entries("r-4").map((e) => [e.key, e.outcome]),
    );
    expect(entries).toEqual([
      ["2", "interrupt"],
      ["1", "value"],
    ]);
    const done = await inReplay(stub, (i) => i.executor.resume("r-4", "yes"));
    expect(done).toMatchObject({
      state: "completed",
      result: { slow: 150, answer: "yes", held: "held" },
    });
    expect(await storedCounters(stub)).toMatchObject({ slowStarts: 1, approvals: 1, echoes: 1 });
  });

  it("leaves a run whose journal was given to execute to its owner, who re-attaches it after a restart", async () => {
    const stub = freshReplay();
    const program = `import { echo, slow } from "test:replay";
      export default async () => [await echo(1), await slow(300), await echo(2)];`;
    await inReplay(stub, (i, state) => {
      state.waitUntil(
        i.executor
          .execute(program, undefined, { id: "r-5", journal: new JournalStore(state) })
          .catch(() => {}),
      );
    });
    for (;;) {
      if ((await storedCounters(stub)).slowStarts === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await stub.crash().catch(() => {});
    const after = env.REPLAY.get(stub.id);
    await runDurableObjectAlarm(after);
    const left = await inReplay(after, (i) => i.executor.get("r-5")?.state);
    expect(left).toBe("running");
    const done = await inReplay(after, (i, state) =>
      i.executor.execute(program, undefined, { id: "r-5", journal: new JournalStore(state) }),
    );
    expect(done).toMatchObject({ state: "completed", result: [1, 300, 2] });
    expect(await storedCounters(after)).toMatchObject({ echoes: 2, slowStarts: 2 });
  });
});

describe("replay: a journal that refuses the resume value", () => {
  it("answers resume with bridge/conflict when the journal does not record the value, and the program never sees it", async () => {
    const stub = freshReplay();
    const program = `import { echo, approval } from "test:replay";
      export default async () => [await echo(1), await approval("ok?")];`;
    const first = await inReplay(stub, (i, state) =>
      i.executor.execute(program, undefined, { id: "r-6", journal: new JournalStore(state) }),
    );
    expect(first.state).toBe("interrupted");
    const outcome = await inReplay(stub, async (i, state) => {
      const store = new JournalStore(state);
      // A port whose pending entry was answered by another writer: resolve refuses, writing nothing.
      const refusing = Object.assign(Object.create(store), {
        lookup: (id: string) => store.lookup(id),
        record: (entry: Parameters<JournalStore["record"]>[0]) => store.record(entry),
        resolve: () => false,
      }) as JournalStore;
      const error = await i.executor.resume("r-6", { approved: true }, { journal: refusing }).then(
        () => null,
        (e: { code?: string; message?: string }) => e,
      );
      const entries = store.entries("r-6").map((e) => [e.key, e.outcome]);
      return { code: error?.code, message: error?.message, entries };
    });
    expect(outcome.code).toBe("bridge/conflict");
    expect(outcome.message).toContain("call 2");
    // The interrupt is still pending: the value reached neither the journal nor the program.
    expect(outcome.entries).toEqual([
      ["1", "value"],
      ["2", "interrupt"],
    ]);
    expect(await storedCounters(stub)).toMatchObject({ echoes: 1, approvals: 1 });
  });
});
