import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { anotherInstance, countingState } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { defineTask, isTasksError, type TaskStep, Tasks } from "../src/index";
import type { FlowObject } from "./fixtures/flow-objects";

const fresh = () => env.FLOW.getByName(`flow-${crypto.randomUUID()}`);
const inFlow = <T>(stub: DurableObjectStub<FlowObject>, fn: (host: FlowObject) => T | Promise<T>) =>
  runInDurableObject(stub, fn);
const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe("flow control through a run's life", () => {
  it("cancels a queued run at once and gives its place to the next; a queued run is not paused", async () => {
    await inFlow(fresh(), async (host) => {
      const receipts = [];
      for (let i = 0; i < 4; i++) receipts.push(await host.tasks.run("limited", { id: `r${i}` }));
      const [, , third, fourth] = receipts;
      expect(await host.tasks.pause(third?.runId as string)).toBe(false);
      expect(await host.tasks.cancel(third?.runId as string, "not needed")).toBe(true);
      expect(host.tasks.get(third?.runId as string)).toMatchObject({
        state: "cancelled",
        reason: "not needed",
      });
      // Cancelling a queued run frees no slot: the fourth still waits.
      expect(host.tasks.get(fourth?.runId as string)?.state).toBe("queued");
      await host.tasks.sendEvent(receipts[0]?.runId as string, "go");
      await settle();
      expect(host.tasks.get(fourth?.runId as string)?.state).toBe("waiting");
      expect(host.peak("limited")).toBe(2);
    });
  });

  it("tells a queued run's story in its event stream: accepted, queued, dequeued, then its attempt", async () => {
    await inFlow(fresh(), async (host) => {
      const first = await host.tasks.run("refusing", { id: "a" });
      const second = await host.tasks.run("limited", { id: "b" });
      const third = await host.tasks.run("limited", { id: "c" });
      const queued = await host.tasks.run("limited", { id: "d" });
      expect(first.state).toBe("running");
      await host.tasks.sendEvent(second.runId, "go");
      await settle();
      const page = host.tasks.events.readPage(queued.runId);
      expect(page.chunks.map((chunk) => chunk.chunk.type).slice(0, 4)).toEqual([
        "task:accepted",
        "task:queued",
        "task:dequeued",
        "task:attempt:started",
      ]);
      expect(page.chunks[1]?.chunk).toMatchObject({ reason: "concurrency" });
      expect(host.events.filter((event) => event.type === "task:dequeued")).toEqual([
        { type: "task:dequeued", runId: queued.runId, definition: "limited" },
      ]);
      expect(third.state).toBe("running");
    });
  });

  it("writes nothing to a queued run while other runs of its key wake, park and settle", async () => {
    await inFlow(fresh(), async (host) => {
      const T0 = Date.UTC(2030, 0, 1);
      host.setClock(T0);
      const holders = [];
      for (let i = 0; i < 2; i++) holders.push(await host.tasks.run("limited", { id: `h${i}` }));
      const queued = [];
      for (let i = 0; i < 20; i++) queued.push(await host.tasks.run("limited", { id: `q${i}` }));
      host.setClock(T0 + 1_000);
      // One holder settles (its slot goes to q0); the other wakes for an event it does not wait for.
      await host.tasks.sendEvent(holders[0]?.runId as string, "go");
      await host.tasks.sendEvent(holders[1]?.runId as string, "other");
      await settle();
      expect(host.tasks.get(queued[0]?.runId as string)?.state).toBe("waiting");
      for (const receipt of queued.slice(1)) {
        expect(host.tasks.get(receipt.runId)).toMatchObject({ state: "queued", updatedAt: T0 });
        expect(host.tasks.events.readPage(receipt.runId).chunks.map((c) => c.chunk.type)).toEqual([
          "task:accepted",
          "task:queued",
        ]);
      }
    });
  });

  it("queues a restarted settled run when its key's slots are taken", async () => {
    await inFlow(fresh(), async (host) => {
      const done = await host.tasks.run("limited", { id: "done" });
      await host.tasks.sendEvent(done.runId, "go");
      await settle();
      expect(host.tasks.get(done.runId)?.state).toBe("completed");
      await host.tasks.run("limited", { id: "x" });
      await host.tasks.run("limited", { id: "y" });
      await host.tasks.restart(done.runId, { from: "go" });
      expect(host.tasks.get(done.runId)).toMatchObject({ state: "queued", reason: "concurrency" });
      expect(host.peak("limited")).toBe(2);
      await host.tasks.sendEvent(host.runsIn("limited", "waiting")[0] as string, "go");
      await settle();
      expect(host.tasks.get(done.runId)?.state).toBe("waiting");
    });
  });

  it("refuses malformed flow options at construction and a bad priority at run()", async () => {
    await inFlow(fresh(), async (host) => {
      const ctx = (host as unknown as { ctx: DurableObjectState }).ctx;
      const handler = async () => 1;
      const bad: unknown[] = [
        { handler, concurrency: { limit: 0 } },
        { handler, concurrency: { limit: 1.5 } },
        { handler, concurrency: { limit: 2, onBusy: "drop" } },
        { handler, rateLimit: { limit: 1 } },
        { handler, rateLimit: { limit: 1, periodMs: 0 } },
        { handler, debounce: {} },
        { handler, debounce: { periodMs: 100, maxDelayMs: 50 } },
        { handler, key: () => "k" },
        { handler, priority: 0.5 },
        { handler, concurrency: { limit: 1 }, retries: 3 },
        { run: handler },
      ];
      for (const entry of bad) {
        expect(
          () => new Tasks(anotherInstance(ctx), { definitions: { probe: entry as never } }),
          JSON.stringify(entry),
        ).toThrow(expect.objectContaining({ code: "tasks/invalid-argument" }));
      }
      for (const priority of [1.5, "high", 2_000_000]) {
        const error = await host.tasks
          .run("limited", { id: "p" }, { priority: priority as never })
          .catch((thrown) => thrown);
        expect(isTasksError(error, "tasks/invalid-argument")).toBe(true);
      }
      const keyless = await host.tasks
        .run("perUser", { id: "k", user: "" })
        .catch((thrown) => thrown);
      expect(isTasksError(keyless, "tasks/invalid-argument")).toBe(true);
      const held = await host.tasks
        .run("limited", { id: "h" }, { paused: true })
        .catch((thrown) => thrown);
      expect(isTasksError(held, "tasks/invalid-argument")).toBe(true);
      expect(host.tasks.list({ definition: "limited" }).items).toEqual([]);
    });
  });

  it("lets go the queued runs of a definition that lost its flow control in a deploy", async () => {
    const stub = fresh();
    await inFlow(stub, async (host) => {
      for (let i = 0; i < 3; i++) await host.tasks.run("limited", { id: `r${i}` });
      expect(host.runsIn("limited", "queued")).toHaveLength(1);
      const ctx = (host as unknown as { ctx: DurableObjectState }).ctx;
      // The next version of the code: the same definition without concurrency.
      const next = new Tasks(anotherInstance(ctx), {
        definitions: {
          limited: defineTask({ handler: async (input: { id: string }) => input.id }),
        },
      });
      expect(host.runsIn("limited", "queued")).toEqual([]);
      expect(next.list({ definition: "limited", state: "pending" }).items).toHaveLength(1);
    });
  });
});

describe("what flow control writes", () => {
  it("writes 8 rows for a queued start and 6 for a slot handoff", async () => {
    await inFlow(fresh(), async (host) => {
      const ctx = (host as unknown as { ctx: DurableObjectState }).ctx;
      const counted = countingState(anotherInstance(ctx));
      const tasks = new Tasks(counted.state, {
        definitions: {
          one: defineTask({
            handler: async (_input: unknown, step: TaskStep) =>
              step.waitForEvent("go", { type: "go" }),
            concurrency: { limit: 1 },
          }),
        },
      });
      const first = await tasks.run("one");
      const before = counted.mark();
      const second = await tasks.run("one");
      expect(tasks.get(second.runId)?.state).toBe("queued");
      expect(counted.counts(before).rowsWritten).toBe(8);
      await tasks.sendEvent(first.runId, "go");
      await settle();
      const handoff = counted.counts(0, (query) =>
        /queued_for = NULL, queue_seq = NULL/.test(query),
      );
      expect(handoff.statements).toBe(1);
      // The dequeue's statement and its one log row.
      expect(handoff.rowsWritten + 1).toBe(6);
    });
  });
});
