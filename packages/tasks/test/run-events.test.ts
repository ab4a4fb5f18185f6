import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { isTasksError, type TaskRunEvent } from "../src/index";
import type { Fixture } from "./fixtures/worker";
import { crashAndWake, freshFixture, inFixture, sleep } from "./helpers";

/** Every event of a run, read page by page (a catch-up read, no tail). */
function allEvents(fixture: Fixture, runId: string, from = 0): TaskRunEvent[] {
  const events: TaskRunEvent[] = [];
  for (let next = from; ; ) {
    const page = fixture.tasks.events.readPage(runId, { from: next, limit: 3 });
    events.push(...page.chunks.map(({ chunk }) => chunk));
    if (page.upToDate) return events;
    next = page.next;
  }
}

/** `type` (and the step, for a step's event) of each event. */
const shape = (events: readonly TaskRunEvent[]) =>
  events.map((e) => ("step" in e && e.step !== null ? `${e.type} ${e.step}` : e.type));

/** An approval run paused and resumed while it waited, then approved: its events, in order. */
const PAUSED_AND_APPROVED = [
  "task:accepted",
  "task:attempt:started",
  "task:step:completed prepare",
  "task:waiting approve",
  "task:paused",
  "task:resumed",
  "task:attempt:started",
  "task:waiting approve",
  "task:step:completed approve",
  "task:attempt:started",
  "task:completed",
];

/** The numbers are 0, 1, 2, … with no gap and no repeat. */
function expectGapless(events: readonly TaskRunEvent[], from = 0): void {
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => from + i));
}

describe("a run's events as a stream", () => {
  it("numbers a run's lifecycle 0, 1, 2, … in order, and a read from any number gives the rest", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("steps@v1", { n: 3 });
      await fixture.settled(runId);
      const events = allEvents(fixture, runId);
      expect(shape(events)).toEqual([
        "task:accepted",
        "task:attempt:started",
        "task:step:completed s0",
        "task:step:completed s1",
        "task:step:completed s2",
        "task:completed",
      ]);
      expectGapless(events);
      expect(events[2]).toMatchObject({
        runId,
        definition: "steps@v1",
        kind: "do",
        attempt: 1,
      });
      expect(allEvents(fixture, runId, 4)).toEqual(events.slice(4));
      expect(fixture.tasks.events.status(runId)).toEqual({
        cursor: 6,
        encoding: "json",
        state: "completed",
        error: null,
      });
      // A settled run's read replays and ends.
      const read: TaskRunEvent[] = [];
      for await (const event of fixture.tasks.events.read(runId, { from: 1 })) read.push(event);
      expect(read).toEqual(events.slice(1));
    });
  });

  it("records retries, waits, a failed step and the failure, each once", async () => {
    await inFixture(async (fixture) => {
      const flaky = await fixture.tasks.run("flaky@v1", { failures: 1 });
      await fixture.settled(flaky.runId);
      expect(shape(allEvents(fixture, flaky.runId))).toEqual([
        "task:accepted",
        "task:attempt:started",
        "task:step:completed a",
        "task:step:retry b",
        "task:attempt:started",
        "task:step:completed b",
        "task:step:completed c",
        "task:completed",
      ]);
      const retry = allEvents(fixture, flaky.runId)[3];
      expect(retry).toMatchObject({
        attempt: 1,
        error: { name: "Error", message: "b failed on attempt 1" },
      });
      expect(typeof (retry as { retryAt: number }).retryAt).toBe("number");

      const sleepy = await fixture.tasks.run("sleepy@v1", { ms: 30 });
      await fixture.settled(sleepy.runId);
      const slept = allEvents(fixture, sleepy.runId);
      expectGapless(slept);
      expect(shape(slept)).toEqual([
        "task:accepted",
        "task:attempt:started",
        "task:step:completed before",
        "task:waiting nap",
        // The attempt that wakes after the sleep goes on: a sleep that parked writes no row more.
        "task:attempt:started",
        "task:step:completed after",
        "task:completed",
      ]);
      expect(slept[3]).toMatchObject({ reason: "sleep", step: "nap" });
      expect((slept[3] as { wakeAt: number }).wakeAt).toBeGreaterThanOrEqual(slept[3]?.at ?? 0);

      const fatal = await fixture.tasks.run("fatal@v1");
      await fixture.settled(fatal.runId);
      const failed = allEvents(fixture, fatal.runId);
      expect(shape(failed)).toEqual([
        "task:accepted",
        "task:attempt:started",
        "task:step:failed doomed",
        "task:failed",
      ]);
      expect(failed[2]).toMatchObject({
        error: { name: "NonRetryableError", message: "the card was declined" },
      });
      expect(failed[3]).toMatchObject({
        error: { name: "NonRetryableError", message: "the card was declined" },
      });
      expectGapless(failed);
    });
  });

  it("records an event wait and its delivery, a pause, a resume and a cancel", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("approval@v1", {});
      await fixture.until(runId, (state) => state === "waiting");
      expect(await fixture.tasks.pause(runId)).toBe(true);
      expect(await fixture.tasks.resume(runId)).toBe(true);
      await fixture.until(runId, (state) => state === "waiting");
      await fixture.tasks.sendEvent(runId, "approve", { by: "ops" });
      await fixture.settled(runId);
      const events = allEvents(fixture, runId);
      expectGapless(events);
      expect(shape(events)).toEqual(PAUSED_AND_APPROVED);
      expect(events[3]).toMatchObject({ reason: "event", eventType: "approve", wakeAt: null });
      expect(events[8]).toMatchObject({ kind: "event" });

      const blocked = await fixture.tasks.run("approval@v1", {});
      await fixture.until(blocked.runId, (state) => state === "waiting");
      await fixture.tasks.cancel(blocked.runId, "not needed");
      expect(allEvents(fixture, blocked.runId).at(-1)).toMatchObject({
        type: "task:cancelled",
        reason: "not needed",
      });
    });
  });

  it("tails: a reader parked on a live run wakes on each event and ends with the settlement", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("approval@v1", {});
      await fixture.until(runId, (state) => state === "waiting");
      const seen: TaskRunEvent[] = [];
      let upToDate = 0;
      const reading = (async () => {
        for await (const batch of fixture.tasks.events.readBatches(runId, {
          onUpToDate: () => upToDate++,
        })) {
          for (const { seq, chunk } of batch) {
            expect(chunk.seq).toBe(seq);
            seen.push(chunk);
          }
        }
      })();
      await sleep(20);
      expect(upToDate).toBe(1);
      expect(seen.map((e) => e.type).at(-1)).toBe("task:waiting");
      await fixture.tasks.sendEvent(runId, "approve", { by: "ops" });
      await reading;
      expect(seen.at(-1)?.type).toBe("task:completed");
      expect(seen).toEqual(allEvents(fixture, runId));
    });
  });

  it("tails from memory: a live reader gets each new event as the tables hold it, with no query per event", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "slow@v1": async (_input: undefined, step) => {
          for (let i = 0; i < 20; i++) {
            await step.do(`s${i}`, async () => {
              await sleep(2);
              if (i === 3 && step.attempt === 1) throw new Error("once");
              return i;
            });
          }
        },
      });
      const { runId } = await tasks.run("slow@v1");
      const mark = fixture.counter.mark();
      const seen: TaskRunEvent[] = [];
      for await (const event of tasks.events.read(runId)) seen.push(event);
      const pages = fixture.counter
        .statements(mark, /FROM dk_tasks_run_log WHERE run_id = \?1 AND ev >= \?2/)
        .filter((query) => /^\s*SELECT/.test(query)).length;
      const durable: TaskRunEvent[] = [];
      for (let next = 0; ; ) {
        const page = tasks.events.readPage(runId, { from: next, limit: 1000 });
        durable.push(...page.chunks.map(({ chunk }) => chunk));
        if (page.upToDate) break;
        next = page.next;
      }
      expect(seen).toEqual(durable);
      expectGapless(seen);
      expect(seen.filter((e) => e.type === "task:step:retry")).toHaveLength(1);
      expect(seen.length).toBeGreaterThan(20);
      // The replay's first page, and a page after the retry's new attempt at most: not one per event.
      expect(pages).toBeLessThanOrEqual(3);
    });
  });

  it("ends a tail with the signal's reason, and quietly (gone) when the run is deleted", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("approval@v1", {});
      await fixture.until(runId, (state) => state === "waiting");
      const abort = new AbortController();
      const aborted = (async () => {
        for await (const _ of fixture.tasks.events.read(runId, { signal: abort.signal })) {
          // drain
        }
      })();
      await sleep(10);
      abort.abort(new Error("reader left"));
      await expect(aborted).rejects.toThrow("reader left");

      let gone: string | null = null;
      const batches: number[] = [];
      const reading = (async () => {
        for await (const batch of fixture.tasks.events.readBatches(runId, {
          onGone: (reason) => {
            gone = reason;
          },
        })) {
          batches.push(batch.length);
        }
      })();
      await sleep(10);
      await fixture.tasks.cancel(runId);
      await reading;
      expect(gone).toBeNull();
      expect(fixture.tasks.delete({ state: ["cancelled"] })).toBe(1);
      expect(fixture.tasks.events.status(runId)).toBeNull();
      // A reader of a run deleted under it ends with onGone.
      const { runId: other } = await fixture.tasks.run("approval@v1", {});
      await fixture.until(other, (state) => state === "waiting");
      const tail = (async () => {
        for await (const _ of fixture.tasks.events.readBatches(other, {
          onGone: (reason) => {
            gone = reason;
          },
        })) {
          // drain
        }
      })();
      await sleep(10);
      await fixture.tasks.cancel(other);
      fixture.tasks.delete({ state: ["cancelled"] });
      await tail;
      expect(gone === null || gone === "deleted").toBe(true);
      expect(
        fixture.counter.state.storage.sql
          .exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_run_log")
          .one().n,
      ).toBe(0);
    });
  });

  it("resumes from a cursor after the object restarts: gapless, in order, the same events", async () => {
    let stub = freshFixture();
    const { runId, seen } = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("interruptible@v1");
      await fixture.until(runId, (state) => state === "running");
      await sleep(20);
      return { runId, seen: allEvents(fixture, runId) };
    }, stub);
    expect(shape(seen)).toEqual([
      "task:accepted",
      "task:attempt:started",
      "task:step:completed first",
    ]);
    // The object dies with the attempt mid-step.
    stub = await crashAndWake(stub);
    await inFixture(async (fixture) => {
      await fixture.settled(runId);
      const rest = allEvents(fixture, runId, seen.length);
      expect(shape(rest)).toEqual([
        "task:attempt:interrupted slow",
        "task:attempt:started",
        "task:step:completed slow",
        "task:step:completed last",
        "task:completed",
      ]);
      expect(rest[0]).toMatchObject({ attempt: 1, step: "slow" });
      const all = allEvents(fixture, runId);
      expectGapless(all);
      // What was read before the restart reads the same after it.
      expect(all.slice(0, seen.length)).toEqual(seen);
      expect(all.slice(seen.length)).toEqual(rest);
    }, stub);
  });

  it("numbers on after an eviction: a pause, a resume and an event delivered to a run this instance never loaded", async () => {
    const stub = freshFixture();
    const runId = await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("approval@v1", {});
      await fixture.until(runId, (state) => state === "waiting");
      return runId;
    }, stub);
    for (const act of ["pause", "resume", "deliver"] as const) {
      await evictDurableObject(stub);
      await inFixture(async (fixture) => {
        if (act === "pause") await fixture.tasks.pause(runId);
        if (act === "resume") {
          await fixture.tasks.resume(runId);
          await fixture.until(runId, (state) => state === "waiting");
        }
        if (act === "deliver") {
          await fixture.tasks.sendEvent(runId, "approve", { by: "ops" });
          await fixture.settled(runId);
        }
      }, stub);
    }
    await inFixture(async (fixture) => {
      const events = allEvents(fixture, runId);
      expectGapless(events);
      expect(shape(events)).toEqual(PAUSED_AND_APPROVED);
    }, stub);
  });

  it("keeps the events of the steps a restart dropped: what was read stays as it was", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("steps@v1", { n: 4 });
      await fixture.settled(runId);
      const before = allEvents(fixture, runId);
      await fixture.tasks.restart(runId, { from: "s2" });
      await fixture.settled(runId);
      const after = allEvents(fixture, runId);
      expectGapless(after);
      expect(after.slice(0, before.length)).toEqual(before);
      expect(shape(after.slice(before.length))).toEqual([
        "task:restarted",
        "task:attempt:started",
        "task:step:completed s2",
        "task:step:completed s3",
        "task:completed",
      ]);
      expect(after[before.length]).toMatchObject({ from: "s2", restart: 1, dropped: 2 });
    });
  });

  it("costs no row per step: the log's rows are per transition, the same for 10 and 110 steps", async () => {
    await inFixture(async (fixture) => {
      const logRows = (runId: string) =>
        fixture.counter.state.storage.sql
          .exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_run_log WHERE run_id = ?", runId)
          .one().n;
      const small = await fixture.tasks.run("steps@v1", { n: 10 });
      const large = await fixture.tasks.run("steps@v1", { n: 110 });
      await fixture.settled(small.runId);
      await fixture.settled(large.runId);
      expect(logRows(small.runId)).toBe(3);
      expect(logRows(large.runId)).toBe(3);
      expect(allEvents(fixture, large.runId)).toHaveLength(113);
      // A version marker is a decision of the code, not an event.
      expect(
        fixture.counter.state.storage.sql
          .exec<{ n: number }>(
            "SELECT count(*) AS n FROM dk_tasks_steps WHERE ev IS NULL AND state = 'completed' AND run_id = ?",
            large.runId,
          )
          .one().n,
      ).toBe(0);
    });
  });

  it("refuses a malformed read at the call and an unknown run at the first iteration", async () => {
    await inFixture(async (fixture) => {
      const { runId } = await fixture.tasks.run("steps@v1", { n: 1 });
      const code = (code: string) => (error: unknown) => isTasksError(error, code as never);
      const events = fixture.tasks.events;
      for (const bad of [-1, 1.5, "0", Number.NaN]) {
        expect(() => events.readPage(runId, { from: bad as number })).toThrow(
          expect.objectContaining({ code: "tasks/invalid-argument" }),
        );
        expect(() => events.read(runId, { from: bad as number })).toThrow(
          expect.objectContaining({ code: "tasks/invalid-argument" }),
        );
      }
      for (const batchSize of [0, 1001, 2.5]) {
        expect(() => events.readBatches(runId, { batchSize })).toThrow(
          expect.objectContaining({ code: "tasks/invalid-argument" }),
        );
      }
      expect(() => events.readBatches(runId, { signal: {} as AbortSignal })).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
      expect(() => events.readPage("")).toThrow(
        expect.objectContaining({ code: "tasks/invalid-argument" }),
      );
      expect(() => events.readPage("nope")).toThrow(
        expect.objectContaining({ code: "tasks/not-found" }),
      );
      const reading = events.read("nope").next();
      await expect(reading).rejects.toSatisfy(code("tasks/not-found"));
      expect(events.status("nope")).toBeNull();
    });
  });
});
