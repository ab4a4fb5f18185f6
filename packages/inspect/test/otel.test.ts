import {
  abortAllDurableObjects,
  env,
  evictDurableObject,
  runDurableObjectAlarm,
} from "cloudflare:test";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { describe, expect, it } from "vitest";
import { traceTaskEvents } from "../src/otel";
import { type Fixture, taskEvents } from "./fixtures/worker";
import { freshStub, inFixture } from "./helpers";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_ID}-01`;

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer("inspect-test");

// Every instance constructed from here on traces its task events with its own listener.
taskEvents.listener = () => traceTaskEvents({ tracer });

/** Runs `fn` in the object. */
function traced<T>(stub: DurableObjectStub<Fixture>, fn: (fixture: Fixture) => T | Promise<T>) {
  return inFixture(fn, stub);
}

async function until(stub: DurableObjectStub<Fixture>, runId: string, state: string) {
  for (let i = 0; i < 50; i++) {
    const now = await traced(stub, (fixture) => fixture.tasks.get(runId)?.state);
    if (now === state) return;
    await scheduler.wait(15);
    await runDurableObjectAlarm(stub);
  }
  throw new Error(`run ${runId} did not reach ${state}`);
}

const spansOf = (runId: string) =>
  exporter.getFinishedSpans().filter((span) => span.attributes["durablekit.task.run_id"] === runId);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe("traceTaskEvents: a run's lifecycle as OpenTelemetry spans", () => {
  it("traces a run under the traceparent it was started with: an attempt span each, step spans in them, retries as events", async () => {
    const stub = freshStub();
    const runId = await traced(stub, async ({ tasks }) => {
      return (await tasks.run("flaky@v1", undefined, { trace: TRACEPARENT })).runId;
    });
    await until(stub, runId, "waiting");
    // Two failed charges, then the charge, the sleep and the wait for the approval.
    for (let i = 0; i < 50; i++) {
      const run = await traced(stub, ({ tasks }) => tasks.get(runId));
      if (run?.state === "waiting" && run.reason === "event") break;
      await scheduler.wait(15);
      await runDurableObjectAlarm(stub);
    }
    await traced(stub, ({ tasks }) => tasks.sendEvent(runId, "approve", { by: "ada" }));
    await until(stub, runId, "completed");

    const spans = spansOf(runId);
    const attempts = spans.filter((span) => span.name === "task.attempt flaky@v1");
    expect(attempts.map((span) => span.attributes["durablekit.task.outcome"])).toEqual([
      "waiting:retry",
      "waiting:retry",
      "waiting:sleep",
      "waiting:event",
      "completed",
    ]);
    // One trace: the request's, every attempt a child of its span.
    expect(new Set(spans.map((span) => span.spanContext().traceId))).toEqual(new Set([TRACE_ID]));
    expect(attempts.every((span) => parentOf(span) === PARENT_ID)).toBe(true);
    // The charge: a span in each of the first three attempts; the two that failed carry the retry.
    const charges = spans.filter((span) => span.name === "task.step charge");
    expect(charges).toHaveLength(3);
    expect(charges.map((span) => parentOf(span))).toEqual(
      attempts.slice(0, 3).map((span) => span.spanContext().spanId),
    );
    expect(charges.map((span) => span.events.map((event) => event.name))).toEqual([
      ["task.step.retry"],
      ["task.step.retry"],
      [],
    ]);
    expect(charges[0]?.events[0]?.attributes?.["exception.message"]).toBe("card declined (try 1)");
    expect(charges.map((span) => span.status.code)).toEqual([2, 2, 0]);
    // Each attempt span lasts from its start to its end, in order.
    for (let i = 1; i < attempts.length; i++) {
      const before = attempts[i - 1] as ReadableSpan;
      const t = (time: [number, number]) => time[0] * 1e3 + time[1] / 1e6;
      expect(t((attempts[i] as ReadableSpan).startTime)).toBeGreaterThanOrEqual(t(before.endTime));
    }
  });

  it("keeps a run started without a traceparent in one trace of its own across an eviction", async () => {
    const stub = freshStub();
    const runId = await traced(stub, async ({ tasks }) => (await tasks.run("approval@v1")).runId);
    await until(stub, runId, "waiting");
    await evictDurableObject(stub);
    // A new instance, a new listener: the resumed attempt lands in the same trace.
    await traced(stub, ({ tasks }) => tasks.sendEvent(runId, "approve", { by: "bo" }));
    await until(stub, runId, "completed");
    const attempts = spansOf(runId).filter((span) => span.name === "task.attempt approval@v1");
    expect(attempts).toHaveLength(2);
    expect(attempts[0]?.spanContext().traceId).toBe(attempts[1]?.spanContext().traceId);
    expect(attempts[0]?.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(parentOf(attempts[0] as ReadableSpan)).toBe(parentOf(attempts[1] as ReadableSpan));
  });

  it("marks the attempt that took over from one the object died under, and a failed run's error", async () => {
    const stub = freshStub();
    const doomed = await traced(stub, async ({ tasks }) => {
      return (await tasks.run("doomed@v1", { reason: "x" })).runId;
    });
    await until(stub, doomed, "failed");
    const [failed] = spansOf(doomed).filter((span) => span.name.startsWith("task.attempt"));
    expect(failed?.status).toMatchObject({ code: 2, message: "out of stock" });
    expect(failed?.attributes["durablekit.task.outcome"]).toBe("failed");

    // The object dies under attempt 1's "hang"; attempt 2 takes the run over and is cancelled.
    const forever = await traced(stub, async ({ tasks }) => (await tasks.run("forever@v1")).runId);
    await until(stub, forever, "running");
    await abortAllDurableObjects();
    const again = env.FIXTURE.get(stub.id);
    await scheduler.wait(250);
    await traced(again, () => {});
    await runDurableObjectAlarm(again).catch(() => {});
    await traced(again, ({ tasks }) => tasks.cancel(forever, "not needed"));
    await until(again, forever, "cancelled");
    const took = spansOf(forever).filter((span) => span.name === "task.attempt forever@v1");
    // Attempt 1's span died with its isolate; attempt 2's says what it took over from.
    expect(took.map((span) => span.attributes["durablekit.task.attempt"])).toEqual([2]);
    expect(took[0]?.attributes["durablekit.task.outcome"]).toBe("cancelled");
    expect(took[0]?.events.map((event) => [event.name, event.attributes])).toEqual([
      [
        "task.attempt.interrupted",
        { "durablekit.task.attempt": 1, "durablekit.task.step": "hang" },
      ],
    ]);

    expect(() => traceTaskEvents({ tracer: {} as never })).toThrow(
      expect.objectContaining({ code: "inspect/invalid-argument" }),
    );
  });
});
