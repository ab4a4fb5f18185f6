import { evictDurableObject, runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { JournalStore } from "@durablekit/handle-journal";
import { countingState } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { freshReplay, inReplay, storedCounters } from "./helpers";

const SHAPE = `(e) => ({ name: e.name, message: e.message, code: e.code, retryable: e.retryable, detail: e.detail, isTypeError: e instanceof TypeError })`;

describe("replay: the journal", () => {
  it("writes one row per journaled call, and a marker plus its resolution for an unsafeToRepeat call", async () => {
    const stub = freshReplay();
    const counts = await inReplay(stub, async (instance, state) => {
      const counting = countingState(state);
      const executor = instance.create({ ctx: counting.state });
      const program = (calls: string) =>
        `import { echo, charge } from "test:replay"; export default async () => { ${calls} return 1; };`;
      const journalRows = () =>
        counting.counts(mark, /dk_journal_entries|dk_journal_chunks/).rowsWritten;
      const allRows = () => counting.counts(mark).rowsWritten;
      // The first replay run creates the journal's tables; measure from the second on.
      await executor.execute(program("await echo(0);"), undefined, { id: "rows-warm" });
      let mark = counting.mark();
      await executor.execute(program(""), undefined, { id: "rows-0" });
      const base = journalRows();
      const baseAll = allRows();
      mark = counting.mark();
      await executor.execute(program("for (let i = 0; i < 10; i++) await echo(i);"), undefined, {
        id: "rows-10",
      });
      const ten = journalRows();
      // Every table: the calls add their journal rows and nothing else (the execution's own rows
      // are the same for 0 and 10 calls).
      const tenAll = allRows() - baseAll;
      mark = counting.mark();
      await executor.execute(program("await charge();"), undefined, { id: "rows-unsafe" });
      const unsafe = journalRows();
      return { base, ten, tenAll, unsafe };
    });
    expect(counts).toEqual({ base: 0, ten: 10, tenAll: 10, unsafe: 2 });
  });

  it("delivers an error with a code and props thrown by a host function identically live and replayed", async () => {
    const stub = freshReplay();
    const live = await inReplay(stub, (i) =>
      i.executor.execute(
        `import { fail } from "test:replay"; export default async () => { try { await fail(); } catch (e) { return (${SHAPE})(e); } };`,
      ),
    );
    const first = await inReplay(stub, (i) =>
      i.executor.execute(
        `import { fail, approval } from "test:replay";
         export default async () => {
           let seen; try { await fail(); } catch (e) { seen = (${SHAPE})(e); }
           await approval();
           return seen;
         };`,
        undefined,
        { id: "err-1" },
      ),
    );
    expect(first.state).toBe("interrupted");
    await evictDurableObject(stub);
    const replayed = await inReplay(stub, (i) => i.executor.resume("err-1", true));
    expect(live.result).toEqual({
      name: "TypeError",
      message: "no such job",
      code: "E_NO_JOB",
      retryable: false,
      detail: { job: "j1", tries: 2 },
      isTypeError: true,
    });
    expect(replayed.result).toEqual(live.result);
    // Once per execution: the replay answered fail() from the journal.
    expect((await storedCounters(stub)).fails).toBe(2);
  });

  it("fails a replay whose program makes another call than the journal recorded at a key, naming the key and both calls", async () => {
    const stub = freshReplay();
    await inReplay(stub, (i) =>
      i.executor.execute(
        `import { echo, approval } from "test:replay"; export default async () => { await echo(1); await echo(2); return approval(); };`,
        undefined,
        { id: "div-1" },
      ),
    );
    // As if the journal had been written by a program that called something else at key 2.
    await inReplay(stub, (_i, state) => {
      state.storage.sql.exec(
        "UPDATE dk_journal_entries SET method = 'slow' WHERE execution_id = 'div-1' AND call_key = '2'",
      );
    });
    const ended = await inReplay(stub, (i) => i.executor.resume("div-1", true));
    expect(ended.state).toBe("failed");
    expect(ended.error?.code).toBe("bridge/diverged");
    expect(ended.error?.message).toContain("at call 2");
    expect(ended.error?.message).toContain("test:replay.slow");
    expect(ended.error?.message).toContain("test:replay.echo");
  });

  it("fails a resumed run with bridge/diverged naming the key when, after a deploy, the same program makes another call there", async () => {
    const stub = freshReplay();
    // The program's source is unchanged (so is its fingerprint); what it calls depends on the host
    // module's shape, which a deploy may change.
    const program = `
      import * as probe from "test:replay";
      export default async function () {
        const a = await probe.echo(1);
        const b = typeof probe.added === "function" ? await probe.added() : await probe.echo(2);
        return [a, b, await probe.approval("ok?")];
      }
    `;
    const first = await inReplay(stub, (i) =>
      i.executor.execute(program, undefined, { id: "div-deploy" }),
    );
    expect(first.state).toBe("interrupted");
    await inReplay(stub, (i) => i.setVersion(2));
    const ended = await inReplay(stub, (i) => i.create().resume("div-deploy", { approved: true }));
    expect(ended.state).toBe("failed");
    expect(ended.error?.code).toBe("bridge/diverged");
    expect(ended.error?.message).toContain("at call 2");
    expect(ended.error?.message).toContain("test:replay.echo");
    expect(ended.error?.message).toContain("test:replay.added");
    expect((await storedCounters(stub)).echoes).toBe(2);
  });

  it("fails a replay whose program ends with journal entries left as diverged", async () => {
    const stub = freshReplay();
    await inReplay(stub, async (i, state) => {
      await i.executor.execute(
        `import { echo, approval } from "test:replay"; export default async () => { await echo(1); return approval(); };`,
        undefined,
        { id: "div-2" },
      );
      const { JournalStore } = await import("@durablekit/handle-journal");
      new JournalStore(state).record({
        executionId: "div-2",
        key: "9",
        module: "test:replay",
        method: "echo",
        argsDigest: "0",
        outcome: "value",
        payload: null,
      });
    });
    const ended = await inReplay(stub, (i) => i.executor.resume("div-2", true));
    expect(ended.error?.code).toBe("bridge/diverged");
    expect(ended.error?.message).toContain("1 recorded call(s)");
  });

  it("fails a replay that reaches an unsafeToRepeat call whose outcome was never recorded, without running it twice", async () => {
    const stub = freshReplay();
    await stub.start(
      `import { charge } from "test:replay"; export default async () => charge(5000);`,
      "unsafe-1",
    );
    for (;;) {
      if ((await storedCounters(stub)).charges === 1) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await stub.crash().catch(() => {});
    const after = env.REPLAY.get(stub.id);
    expect(await runDurableObjectAlarm(after)).toBe(true);
    const record = await inReplay(after, (i) => i.executor.get("unsafe-1"));
    expect(record?.state).toBe("failed");
    expect(record?.error?.code).toBe("bridge/unsafe-to-repeat");
    expect((await storedCounters(after)).charges).toBe(1);
  });

  it("replays a settled unsafeToRepeat call from the journal", async () => {
    const stub = freshReplay();
    await inReplay(stub, (i) =>
      i.executor.execute(
        `import { charge, approval } from "test:replay"; export default async () => { const c = await charge(); await approval(); return c; };`,
        undefined,
        { id: "unsafe-2" },
      ),
    );
    const done = await inReplay(stub, (i) => i.executor.resume("unsafe-2", 1));
    expect(done).toMatchObject({ state: "completed", result: "charged" });
    expect((await storedCounters(stub)).charges).toBe(1);
  });
});

describe("replay: what a replay run refuses", () => {
  it("refuses functions, callbacks, streams and objects it could not revive, at that call, saying what to do", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, (i) =>
      i.executor.execute(
        `import { fn, unsafeFn, stream, takesCallback, takesStream, opaque, unrevivable, unsafeStream, unsafeCallback, unsafeTakesStream } from "test:replay";
         const refusal = async (call) => { try { await call(); return "allowed"; } catch (e) { return { code: e.code, message: e.message }; } };
         const body = () => new Response("sent").body;
         export default async () => ({
           fn: await refusal(() => fn()),
           stream: await refusal(() => stream()),
           callback: await refusal(() => takesCallback(async (n) => n)),
           streamArgument: await refusal(() => takesStream(body())),
           opaque: await refusal(() => opaque()),
           unrevivable: await refusal(() => unrevivable()),
           unsafeFn: await (await unsafeFn())(21),
           unsafeStream: await new Response(await unsafeStream()).text(),
           unsafeCallback: await unsafeCallback(async (n) => n + 1),
           unsafeStreamArgument: await unsafeTakesStream(body()),
         });`,
      ),
    );
    expect(out.state).toBe("completed");
    const result = out.result as Record<string, { code: string; message: string }> & {
      unsafeFn: number;
      unsafeStream: string;
      unsafeCallback: number;
      unsafeStreamArgument: string;
    };
    for (const name of ["fn", "stream", "callback", "streamArgument", "opaque", "unrevivable"]) {
      expect(result[name]?.code, name).toBe("bridge/not-replayable");
    }
    expect(result.fn?.message).toContain("unsafeToRepeat");
    expect(result.stream?.message).toContain("read()");
    expect(result.callback?.message).toContain("callback");
    expect(result.opaque?.message).toContain("[handle.serialize]");
    expect(result.unrevivable?.message).toContain("Ghost");
    expect(result.streamArgument?.message).toContain("ReadableStream");
    // Marked unsafeToRepeat on the host side, each is allowed.
    expect(result.unsafeFn).toBe(42);
    expect(result.unsafeStream).toBe("streamed");
    expect(result.unsafeCallback).toBe(21);
    expect(result.unsafeStreamArgument).toBe("sent");
  });
});

describe("replay: keys and refusals", () => {
  it("keys a call before admission and journals its refusal, so a limit raised before the resume neither runs it nor shifts the keys after it", async () => {
    const stub = freshReplay();
    const program = `
      import { echo, slow, approval } from "test:replay";
      export default async function () {
        const [waited, refused] = await Promise.all([
          slow(30),
          echo("second").catch((e) => e.code),
        ]);
        const third = await echo("third");
        const answer = await approval("ok?");
        return { waited, refused, third, answer };
      }
    `;
    const first = await inReplay(stub, (i) =>
      i.create({ limits: { maxConcurrentCalls: 1 } }).execute(program, undefined, { id: "keys-1" }),
    );
    expect(first.state).toBe("interrupted");
    const recorded = await inReplay(stub, (_i, state) =>
      new JournalStore(state)
        .entries("keys-1")
        .map((e) => [e.key, e.method, e.outcome])
        .sort((a, b) => Number(a[0]) - Number(b[0])),
    );
    // The refused call took key 2 and its refusal is the entry there.
    expect(recorded).toEqual([
      ["1", "slow", "value"],
      ["2", "echo", "error"],
      ["3", "echo", "value"],
      ["4", "approval", "interrupt"],
    ]);
    const before = await storedCounters(stub);
    expect(before).toMatchObject({ echoes: 1, slowStarts: 1, approvals: 1 });
    // Resumed by an executor with the default limit (32 calls at once): the call would now be
    // admitted, but the journal answers it with its refusal and key 3 stays echo("third").
    const resumed = await inReplay(stub, (i) => i.create().resume("keys-1", { approved: true }));
    expect(resumed).toMatchObject({
      state: "completed",
      result: {
        waited: 30,
        refused: "bridge/limit-concurrency",
        third: "third",
        answer: { approved: true },
      },
    });
    expect(await storedCounters(stub)).toMatchObject({ echoes: 1, slowStarts: 1, approvals: 1 });
  });
});
