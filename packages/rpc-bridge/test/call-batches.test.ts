import { decode, JournalStore } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import { CallBatches } from "../src/host/call-batches";
import { DEFAULT_LIMITS } from "../src/limits";
import { ModuleRegistry } from "../src/modules/module-registry";
import { Run } from "../src/run/run";
import { type Answer, MAX_BATCH_CALLS, TAG } from "../src/shared/wire";
import { freshReplay, inReplay, storedCounters } from "./helpers";

const FAN_OUT = `
  import { echo, approval } from "test:replay";
  export default async function () {
    const values = await Promise.all(Array.from({ length: 25 }, (_, i) => echo(i)));
    const answer = await approval("ok?");
    return { values, answer };
  }
`;

describe("call batches: calls a program starts together cross as one batch", () => {
  it("sends 25 calls started together as one batch, keys and journals them in call order, and runs each once across a resume", async () => {
    const stub = freshReplay();
    const live = await inReplay(stub, async (i, state) => {
      const execution = await i.executor.execute(FAN_OUT, undefined, { id: "fan-out" });
      const entries = new JournalStore(state)
        .entries("fan-out")
        .filter((e) => e.outcome === "value")
        .map((e) => [e.key, (decode(e.payload ?? "null") as { r: unknown }).r]);
      return { execution, traffic: { ...i.loader.traffic }, entries };
    });
    expect(live.execution.state).toBe("interrupted");
    // 25 echoes in one batch, then the approval alone.
    expect(live.traffic).toMatchObject({ invokes: 26, batches: 1, tickets: 0 });
    expect(live.entries).toEqual(Array.from({ length: 25 }, (_, i) => [String(i + 1), i]));
    const done = await inReplay(stub, (i) => i.executor.resume("fan-out", "yes"));
    expect(done).toMatchObject({
      state: "completed",
      result: { values: Array.from({ length: 25 }, (_, i) => i), answer: "yes" },
    });
    expect(await storedCounters(stub)).toMatchObject({ echoes: 25, approvals: 1 });
  });

  for (const onInterrupt of ["replay", "fail"] as const) {
    it(`answers a batched call that waits for I/O by ticket, without holding back the others (onInterrupt ${onInterrupt})`, async () => {
      const stub = freshReplay();
      const out = await inReplay(stub, async (i) => {
        const execution = await i.executor.execute(
          `import { echo, slow } from "test:replay";
           export default async function () {
             const order = [];
             await Promise.all([
               slow(150).then(() => order.push("slow")),
               echo("a").then(() => order.push("a")),
               echo("b").then(() => order.push("b")),
             ]);
             return order;
           }`,
          undefined,
          { id: `ticket-${onInterrupt}`, onInterrupt },
        );
        return { execution, traffic: { ...i.loader.traffic } };
      });
      // Had the batch waited for its slowest call, the answers would come in call order.
      expect(out.execution).toMatchObject({ state: "completed", result: ["a", "b", "slow"] });
      expect(out.traffic).toMatchObject({ invokes: 3, batches: 1, tickets: 1 });
      expect(await storedCounters(stub)).toMatchObject({ slowStarts: 1, slowEnds: 1, echoes: 2 });
    });
  }

  it("sends a call waiting in a batch before the dispose of its object that follows it", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i) => {
      const execution = await i.executor.execute(
        `import { createJob } from "codemode:jobs";
         export default async function () {
           const job = await createJob({ name: "n" });
           const first = job.info();
           const second = job.info();
           job[Symbol.dispose]();
           return [(await first).name, (await second).name];
         }`,
        undefined,
        { id: "dispose-after", onInterrupt: "fail" },
      );
      return { execution, traffic: { ...i.loader.traffic } };
    });
    // Sent after the dispose, both calls would be refused: the object would be gone.
    expect(out.execution).toMatchObject({ state: "completed", result: ["n", "n"] });
    expect(out.traffic).toMatchObject({ invokes: 3, batches: 1 });
    expect(await storedCounters(stub)).toMatchObject({ disposals: 1 });
  });
});

/** A run over one module (handle 1): `now` answers at once, `later` after 20 ms; both count their runs. */
function runOver(ran: { now: number; later: number }): Run {
  return new Run({
    executionId: "batch-1",
    attempt: 1,
    access: "read-write",
    limits: DEFAULT_LIMITS,
    registry: new ModuleRegistry({
      "test:t": {
        now: () => ++ran.now,
        later: async () => {
          await new Promise((resolve) => setTimeout(resolve, 20));
          return ++ran.later;
        },
      },
    }),
  });
}

const isError = (answer: unknown, code: string) =>
  (answer as { [TAG]?: string; record?: { $error?: { code?: string } } })[TAG] === "error" &&
  (answer as { record: { $error: { code?: string } } }).record.$error.code === code;

describe("call batches: the host checks what the isolate sends", () => {
  it("refuses a batch that is not an array of 1 to MAX_BATCH_CALLS calls whole, before any call runs", () => {
    const ran = { now: 0, later: 0 };
    const run = runOver(ran);
    const batches = new CallBatches(run);
    const call = [1, "now", [], "plain"];
    for (const bad of [
      undefined,
      "calls",
      { length: 1, 0: call },
      [],
      Array(MAX_BATCH_CALLS + 1).fill(call),
    ]) {
      expect(() => batches.invoke(bad)).toThrow(
        expect.objectContaining({ code: "bridge/invalid-argument" }),
      );
    }
    expect(ran.now).toBe(0);
    run.end();
  });

  it("refuses a malformed call of a batch alone, as invoke refuses it, and runs the others", () => {
    const ran = { now: 0, later: 0 };
    const run = runOver(ran);
    const reply = new CallBatches(run).invoke([
      [1, "now", [], "plain"],
      "not a call",
      [1, "nope", [], "plain"],
      [1, "now", [], "plain"],
    ]);
    expect(reply).not.toBeInstanceOf(Promise);
    const { answers, tickets } = reply as { answers: Answer[]; tickets: number[] };
    expect(tickets).toEqual([0, 0, 0, 0]);
    expect(answers[0]).toBe(1);
    // What invoke answers a call it cannot read.
    expect(isError(answers[1], "bridge/unknown-method")).toBe(true);
    expect(isError(answers[2], "bridge/unknown-method")).toBe(true);
    expect(answers[3]).toBe(2);
    expect(ran.now).toBe(2);
    run.end();
  });

  it("answers a ticket once, and a ticket it never gave with an error", async () => {
    const ran = { now: 0, later: 0 };
    const run = runOver(ran);
    const batches = new CallBatches(run);
    const reply = await batches.invoke([
      [1, "now", [], "plain"],
      [1, "later", [], "plain"],
    ]);
    expect(reply.answers[0]).toBe(1);
    expect(reply.tickets[0]).toBe(0);
    const ticket = reply.tickets[1] as number;
    expect(ticket).toBeGreaterThan(0);
    expect(await batches.answer(ticket)).toBe(1);
    expect(ran.later).toBe(1);
    expect(isError(await batches.answer(ticket), "bridge/invalid-argument")).toBe(true);
    for (const forged of [ticket + 1, -1, "1", null]) {
      expect(isError(await batches.answer(forged), "bridge/invalid-argument")).toBe(true);
    }
    run.end();
  });
});
