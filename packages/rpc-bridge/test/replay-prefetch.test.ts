import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { BridgeExecution } from "../src/index";
import { PREFETCH_MAX_CHARS } from "../src/replay/isolate-answers";
import type { Answer, EvaluateOptions } from "../src/shared/wire";
import type { BridgeTraffic } from "./fixtures/counting-loader";
import type { ReplayFixture } from "./fixtures/worker";
import { freshReplay, inReplay, storedCounters } from "./helpers";

const PLAIN_CALLS = `
  import { echo, approval } from "test:replay";
  export default async function () {
    const out = [];
    for (let i = 0; i < 20; i++) out.push(await echo({ i, tag: "x" + i, list: [i, null, true] }));
    const failed = await echo("last").then(() => null);
    const answer = await approval("ok?");
    return { n: out.length, last: out[19], answer, failed };
  }
`;

/**
 * Resumes `id` with `{ approved: true }` and answers how it ended with what crossed the bridge in
 * that attempt alone; `tamper` may change the options its isolate gets.
 */
function resumeCounted(
  stub: DurableObjectStub<ReplayFixture>,
  id: string,
  tamper?: (options: EvaluateOptions) => void,
): Promise<{ execution: BridgeExecution; traffic: BridgeTraffic }> {
  return inReplay(stub, async (i) => {
    Object.assign(i.loader.traffic, {
      attempts: 0,
      invokes: 0,
      batches: 0,
      tickets: 0,
      reportedWithInvokes: 0,
      reportedAtEnd: 0,
      prefetched: 0,
    });
    i.loader.tamper = tamper ?? null;
    const execution = await i.executor.resume(id, { approved: true });
    return { execution, traffic: { ...i.loader.traffic } };
  });
}

/** Waits until the stored counters satisfy `ready`. */
async function waitFor(
  stub: DurableObjectStub<ReplayFixture>,
  ready: (counters: Record<string, number>) => boolean,
): Promise<void> {
  for (;;) {
    if (ready(await storedCounters(stub))) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("replay: recorded plain calls are answered inside the isolate", () => {
  it("answers a resumed run's recorded plain calls in the isolate: the host receives no invoke for them, only their report", async () => {
    const stub = freshReplay();
    const first = await inReplay(stub, (i) =>
      i.executor.execute(PLAIN_CALLS, undefined, { id: "local-1" }),
    );
    expect(first.state).toBe("interrupted");
    const live = await inReplay(stub, (i) => ({ ...i.loader.traffic }));
    expect(live).toMatchObject({ invokes: 22, prefetched: 0, reportedAtEnd: 0 });
    const resumed = await resumeCounted(stub, "local-1");
    expect(resumed.execution).toMatchObject({
      state: "completed",
      result: {
        n: 20,
        last: { i: 19, tag: "x19", list: [19, null, true] },
        answer: { approved: true },
        failed: null,
      },
    });
    // 21 echoes and the resumed approval: all answered in the isolate, reported with the outcome.
    expect(resumed.traffic).toEqual({
      attempts: 1,
      invokes: 0,
      batches: 0,
      tickets: 0,
      reportedWithInvokes: 0,
      reportedAtEnd: 22,
      prefetched: 22,
    });
    const counters = await storedCounters(stub);
    expect(counters.echoes).toBe(21);
    expect(counters.approvals).toBe(1);
  });

  it("fails the replay with bridge/diverged when the isolate reports a call answered with the entry recorded at another key", async () => {
    const stub = freshReplay();
    const source = `
      import { echo, approval } from "test:replay";
      export default async () => [await echo(1), await echo(2), await approval("ok?")];
    `;
    expect(
      (await inReplay(stub, (i) => i.executor.execute(source, undefined, { id: "swap-1" }))).state,
    ).toBe("interrupted");
    const resumed = await inReplay(stub, (i) => {
      // A lying isolate: it claims call 1 took the answer recorded at key 2, and call 2 that of key 1.
      i.loader.forge = ({ seqs }) => {
        const [one, two] = seqs;
        if (one !== undefined && two !== undefined) [seqs[0], seqs[1]] = [two, one];
      };
      return i.executor.resume("swap-1", { approved: true });
    });
    expect(resumed.state).toBe("failed");
    expect(resumed.error?.code).toBe("bridge/diverged");
    expect(resumed.error?.message).toContain("call 1 (test:replay.echo)");
    expect((await storedCounters(stub)).echoes).toBe(2);
  });

  it("refuses a report of a call answered with an entry the host never sent to the isolate", async () => {
    const stub = freshReplay();
    const source = `
      import { createJob } from "codemode:jobs";
      import { echo, approval } from "test:replay";
      export default async () => [await createJob({ name: "j" }).then(() => 0), await echo(2), await approval("ok?")];
    `;
    await inReplay(stub, (i) => i.executor.execute(source, undefined, { id: "forge-1" }));
    const resumed = await inReplay(stub, (i) => {
      // The createJob entry (seq 1) holds a handle: it is never sent ahead.
      i.loader.forge = (answered) => {
        answered.seqs.unshift(1);
        answered.args.unshift([{ name: "j" }]);
      };
      return i.executor.resume("forge-1", { approved: true });
    });
    expect(resumed.state).toBe("failed");
    expect(resumed.error?.code).toBe("bridge/diverged");
    expect((await storedCounters(stub)).creates).toBe(1);
  });

  it("reports the arguments of a call answered in the isolate as they were when it was made, though the program changes them later", async () => {
    const stub = freshReplay();
    const source = `
      import { echo, approval } from "test:replay";
      export default async function () {
        const o = { n: 1, list: [1] };
        const a = await echo(o);
        o.n = 2;
        o.list.push(2);
        const b = await echo(o);
        o.n = 3;
        o.list.push(3);
        return [a.n, b.n, b.list.length, await approval("ok?")];
      }
    `;
    await inReplay(stub, (i) => i.executor.execute(source, undefined, { id: "mutate-1" }));
    const resumed = await resumeCounted(stub, "mutate-1");
    expect(resumed.execution).toMatchObject({
      state: "completed",
      result: [1, 2, 2, { approved: true }],
    });
    expect(resumed.traffic).toMatchObject({ invokes: 0, reportedAtEnd: 3 });
  });

  it("fails the run with bridge/diverged at a call answered in the isolate whose arguments changed, before the host runs anything more", async () => {
    const stub = freshReplay();
    const source = `
      import { createJob } from "codemode:jobs";
      import { echo, approval } from "test:replay";
      export default async function () {
        const a = await echo(1);
        const b = await echo(a + 1);
        await createJob({ name: "after" });
        return [a, b, await approval("ok?")];
      }
    `;
    await inReplay(stub, (i) => i.executor.execute(source, undefined, { id: "args-1" }));
    const before = await storedCounters(stub);
    expect(before).toMatchObject({ echoes: 2, creates: 1 });
    // The isolate is handed another first answer: its second call is made with other arguments
    // than recorded, and still answered in the isolate (the isolate does not compare arguments).
    const resumed = await resumeCounted(stub, "args-1", (options) => {
      const answers = options.replay?.answers;
      if (answers !== undefined) answers.answers[0] = 41 as unknown as Answer;
    });
    expect(resumed.execution.state).toBe("failed");
    expect(resumed.execution.error?.code).toBe("bridge/diverged");
    expect(resumed.execution.error?.message).toContain(
      "call 2: the journal recorded test:replay.echo",
    );
    // The report came with createJob's invoke, which was refused: createJob did not run again.
    expect(resumed.traffic).toMatchObject({ invokes: 1, reportedWithInvokes: 2 });
    expect(await storedCounters(stub)).toMatchObject({ echoes: 2, creates: 1 });
  });

  it("hands the program one answer answered in the isolate per macrotask, so their continuations never interleave, as when they were recorded", async () => {
    const stub = freshReplay();
    const source = `
      import { echo, approval } from "test:replay";
      export default async function () {
        const seen = [];
        const chain = (name) => async () => {
          for (let i = 0; i < 500; i++) { seen.push(name); await null; }
        };
        await Promise.all([echo("a").then(chain("a")), echo("b").then(chain("b")), echo("c").then(chain("c"))]);
        const order = seen.join("");
        await approval("ok?");
        return order;
      }
    `;
    const first = await inReplay(stub, (i) =>
      i.executor.execute(source, undefined, { id: "turns-1" }),
    );
    expect(first.state).toBe("interrupted");
    const resumed = await resumeCounted(stub, "turns-1");
    expect(resumed.traffic).toMatchObject({ invokes: 0, prefetched: 4 });
    expect(resumed.execution.state).toBe("completed");
    const order = resumed.execution.result as string;
    // Each chain ran whole before the next answer was delivered.
    expect(order).toMatch(/^(a{500}|b{500}|c{500}){3}$/);
    expect(new Set([order.slice(0, 500), order.slice(500, 1000), order.slice(1000)]).size).toBe(3);
  });

  it("replays a mixed run identically: calls returning or made on objects go to the host, plain top-level calls are answered in the isolate", async () => {
    const stub = freshReplay();
    const source = `
      import { createJob } from "codemode:jobs";
      import { echo, approval, fail } from "test:replay";
      export default async function () {
        const a = await echo("a");
        const job = await createJob({ name: "mixed" });
        const b = await echo({ b: [1, 2] });
        const run = await job.start();
        const info = await job.info();
        const error = await fail().catch((e) => [e.name, e.code, e.message]);
        const waited = await run.wait(1);
        const c = await echo("c");
        const answer = await approval("ok?");
        return { a, b, info, error, waited: waited.status, c, answer, now: Date.now() - 0 > 0 };
      }
    `;
    expect(
      (await inReplay(stub, (i) => i.executor.execute(source, undefined, { id: "mixed-1" }))).state,
    ).toBe("interrupted");
    const before = await storedCounters(stub);
    const resumed = await resumeCounted(stub, "mixed-1");
    expect(resumed.execution).toMatchObject({
      state: "completed",
      result: {
        a: "a",
        b: { b: [1, 2] },
        info: { name: "mixed", version: 1 },
        error: ["TypeError", "E_NO_JOB", "no such job"],
        waited: "succeeded",
        c: "c",
        answer: { approved: true },
        now: true,
      },
    });
    // createJob (returns a handle), job.start, job.info, run.wait (calls on objects) go to the host;
    // echo("a"), echo({ b }), fail(), echo("c"), approval() are answered in the isolate.
    expect(resumed.traffic).toMatchObject({ invokes: 4, prefetched: 5 });
    expect(resumed.traffic.reportedWithInvokes + resumed.traffic.reportedAtEnd).toBe(5);
    const after = await storedCounters(stub);
    // Nothing ran again: the replay answered every recorded call from the journal.
    for (const name of ["echoes", "creates", "starts", "waits", "fails", "approvals"]) {
      expect(after[name], name).toBe(before[name]);
    }
  });

  it("completes a run evicted twice, once during a replay that answered calls in the isolate, with each host call run at most twice", async () => {
    const source = `
      import { echo, slow } from "test:replay";
      export default async () => [await echo("a"), await echo("b"), await slow(300), await echo("c"), await slow(301), await echo("d")];
    `;
    const first = freshReplay();
    await first.start(source, "evict-1");
    await waitFor(first, (c) => (c.slowStarts ?? 0) >= 1);
    await first.crash().catch(() => {});
    const second = env.REPLAY.get(first.id);
    // Attempt 2 answers echo a and b in the isolate, runs slow(300) and echo c live, dies in slow(301).
    const alarm = runDurableObjectAlarm(second).catch(() => false);
    await waitFor(second, (c) => (c.slowStarts ?? 0) >= 3);
    await second.crash().catch(() => {});
    await alarm;
    const third = env.REPLAY.get(first.id);
    expect(await runDurableObjectAlarm(third)).toBe(true);
    const done = await inReplay(third, (i) => ({
      record: i.executor.get("evict-1"),
      traffic: { ...i.loader.traffic },
    }));
    expect(done.record).toMatchObject({
      state: "completed",
      attempt: 3,
      result: ["a", "b", 300, "c", 301, "d"],
    });
    // Attempt 3: a, b, slow(300), c answered in the isolate and reported with the invoke of slow(301).
    expect(done.traffic).toMatchObject({
      attempts: 1,
      invokes: 2,
      prefetched: 4,
      reportedWithInvokes: 4,
      reportedAtEnd: 0,
    });
    const counters = await storedCounters(third);
    // slow(300) started in attempts 1 and 2, slow(301) in attempts 2 and 3; each echo ran once.
    expect(counters).toMatchObject({ echoes: 4, slowStarts: 4, slowEnds: 2 });
  });
});

describe("replay: answers in the isolate stay in step with the host and bounded", () => {
  const refusedFirst = (arg: string) => `
    import { echo, approval } from "test:replay";
    class Point { constructor() { this.x = 1; } }
    export default async function () {
      const refused = await echo(${arg}).then(
        (v) => "sent: " + JSON.stringify(v),
        (e) => "refused: " + e.name,
      );
      const one = await echo(1);
      const two = await echo(2);
      const answer = await approval("ok?");
      return { refused, one, two, answer };
    }
  `;

  for (const [what, arg] of [
    ["a class instance", "new Point()"],
    ["a symbol", "Symbol('s')"],
  ] as const) {
    it(`replays a run in which Workers RPC refused a call's arguments (${what}), which the host never keyed: later calls get their own recorded answers`, async () => {
      const stub = freshReplay();
      const id = `refused-${what.replaceAll(" ", "-")}`;
      const first = await inReplay(stub, (i) =>
        i.executor.execute(refusedFirst(arg), undefined, { id }),
      );
      expect(first.state).toBe("interrupted");
      expect((await storedCounters(stub)).echoes).toBe(2);
      const resumed = await resumeCounted(stub, id);
      expect(resumed.execution.state).toBe("completed");
      const result = resumed.execution.result as Record<string, unknown>;
      expect(result.refused).toMatch(/^refused: /);
      expect(result).toMatchObject({ one: 1, two: 2, answer: { approved: true } });
      // Both echoes came from the journal: nothing ran again.
      expect((await storedCounters(stub)).echoes).toBe(2);
      expect(resumed.traffic.prefetched).toBe(3);
    });
  }

  it("sends ahead at most PREFETCH_MAX_CHARS of journal text; the calls past it are answered by the host from the journal", async () => {
    const stub = freshReplay();
    const source = `
      import { echo, approval } from "test:replay";
      export default async function () {
        let total = 0;
        for (let i = 0; i < 6; i++) total += (await echo(String(i).repeat(900000))).length;
        const answer = await approval("ok?");
        return { total, answer };
      }
    `;
    const first = await inReplay(stub, (i) =>
      i.executor.execute(source, undefined, { id: "budget" }),
    );
    expect(first.state).toBe("interrupted");
    const resumed = await resumeCounted(stub, "budget");
    expect(resumed.execution).toMatchObject({
      state: "completed",
      result: { total: 5_400_000, answer: { approved: true } },
    });
    // 4 answers of 900,000 characters fit the 4 MiB budget, with the interrupt's; the last 2 echoes
    // went to the host, which answered them from the journal without running them.
    expect(PREFETCH_MAX_CHARS).toBe(4 * 1024 * 1024);
    expect(resumed.traffic.prefetched).toBe(5);
    expect(resumed.traffic.invokes).toBe(2);
    expect((await storedCounters(stub)).echoes).toBe(6);
  });
});
