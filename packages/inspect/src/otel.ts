import type { TaskEvent } from "@durablekit/tasks";
import {
  type Attributes,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { InspectError } from "./errors";

/** Options of {@link traceTaskEvents}. */
export interface InspectTraceOptions {
  /** The tracer the spans are made with, e.g. `trace.getTracer("orders-worker")`. */
  tracer: Tracer;
  /** The clock of span times, epoch milliseconds: the `now` of the object's `Tasks`. Default `Date.now`. */
  now?: () => number;
}

/** What the listener holds for a run while one of its attempts runs in this isolate. */
interface LiveRun {
  attempt: Span;
  steps: Map<string, Span>;
}

const ATTR = {
  runId: "durablekit.task.run_id",
  definition: "durablekit.task.definition",
  attempt: "durablekit.task.attempt",
  step: "durablekit.task.step",
  outcome: "durablekit.task.outcome",
  wakeAt: "durablekit.task.wake_at",
  eventType: "durablekit.task.event_type",
  errorCode: "durablekit.error.code",
} as const;

/** 64-bit FNV-1a of `text` from `seed`, as 16 hex digits. */
function fnv64(text: string, seed: bigint): string {
  let hash = seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
}

/**
 * The parent of a run's attempt spans: the W3C `traceparent` the run was started under, or, for a
 * run started without one, a trace of its own derived from its id — the same in every attempt, so
 * one trace covers the whole run whichever isolate runs it.
 */
function parentOf(runId: string, traceparent: string | undefined) {
  const match =
    traceparent === undefined
      ? null
      : /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceparent);
  const spanContext = match
    ? {
        traceId: match[1] as string,
        spanId: match[2] as string,
        traceFlags: Number.parseInt(match[3] as string, 16),
      }
    : {
        traceId: fnv64(runId, 0xcbf29ce484222325n) + fnv64(runId, 0x84222325cbf29ce4n),
        spanId: fnv64(`span:${runId}`, 0xcbf29ce484222325n),
        traceFlags: 1,
      };
  return trace.setSpanContext(ROOT_CONTEXT, { ...spanContext, isRemote: true });
}

function errorAttributes(error: { message: string; code?: string }): Attributes {
  return error.code === undefined ? {} : { [ATTR.errorCode]: error.code };
}

/**
 * An `onEvent` listener for `Tasks` that turns a run's lifecycle into OpenTelemetry spans through
 * `@opentelemetry/api` (the host's own provider and exporter; nothing is exported from here):
 *
 * - a run is a trace: the one its `traceparent` names (`run(…, { trace })`), or one derived from
 *   its id — the same after evictions, restarts and resumes days later;
 * - each attempt is a span (`task.attempt <definition>`), from its start to the write that ends it
 *   (completed, failed, cancelled, or waiting for a sleep, an event or a retry);
 * - each step that runs is a child span (`task.step <name>`); a retry is a span event
 *   `task.step.retry` on it (with the error), and an attempt that took over from one the object died
 *   under carries a span event `task.attempt.interrupted`.
 *
 * @throws {InspectError} `inspect/invalid-argument` when `tracer` is not a `Tracer`.
 *
 * ```ts
 * readonly tasks = new Tasks(this.ctx, {
 *   definitions,
 *   onEvent: traceTaskEvents({ tracer: trace.getTracer("orders") }),
 * });
 * ```
 */
export function traceTaskEvents(options: InspectTraceOptions): (event: TaskEvent) => void {
  const tracer = options?.tracer;
  if (typeof tracer?.startSpan !== "function") {
    throw new InspectError(
      "inspect/invalid-argument",
      "traceTaskEvents({ tracer }): tracer must be an OpenTelemetry Tracer (trace.getTracer(name)).",
    );
  }
  const now = options.now ?? Date.now;
  const live = new Map<string, LiveRun>();
  /** The attempt each run last lost to a dead isolate, until the next attempt's span starts. */
  const interrupted = new Map<string, { attempt: number; step: string | null }>();

  const endRun = (runId: string, outcome: string, attributes: Attributes = {}, error?: string) => {
    const run = live.get(runId);
    if (run === undefined) return;
    live.delete(runId);
    const at = now();
    for (const step of run.steps.values()) {
      if (error !== undefined) step.setStatus({ code: SpanStatusCode.ERROR, message: error });
      step.end(at);
    }
    run.attempt.setAttributes({ [ATTR.outcome]: outcome, ...attributes });
    if (error !== undefined) run.attempt.setStatus({ code: SpanStatusCode.ERROR, message: error });
    run.attempt.end(at);
  };

  return (event: TaskEvent) => {
    // Messages between objects (`task:child:delivered`, `…:refused`, `…:dropped`) belong to no run.
    if (!("runId" in event)) return;
    const base = { [ATTR.runId]: event.runId, [ATTR.definition]: event.definition };
    switch (event.type) {
      case "task:attempt:interrupted":
        interrupted.set(event.runId, { attempt: event.attempt, step: event.step });
        return;
      case "task:attempt:started": {
        // An attempt of this isolate that never wrote its end was superseded.
        endRun(event.runId, "superseded");
        const span = tracer.startSpan(
          `task.attempt ${event.definition}`,
          {
            kind: SpanKind.INTERNAL,
            startTime: now(),
            attributes: { ...base, [ATTR.attempt]: event.attempt },
          },
          parentOf(event.runId, event.trace),
        );
        const lost = interrupted.get(event.runId);
        if (lost !== undefined) {
          interrupted.delete(event.runId);
          span.addEvent(
            "task.attempt.interrupted",
            {
              [ATTR.attempt]: lost.attempt,
              ...(lost.step === null ? {} : { [ATTR.step]: lost.step }),
            },
            now(),
          );
        }
        live.set(event.runId, { attempt: span, steps: new Map() });
        return;
      }
      case "task:step:started": {
        const run = live.get(event.runId);
        if (run === undefined) return;
        const parent = trace.setSpan(ROOT_CONTEXT, run.attempt);
        const span = tracer.startSpan(
          `task.step ${event.step}`,
          {
            kind: SpanKind.INTERNAL,
            startTime: now(),
            attributes: { ...base, [ATTR.step]: event.step, [ATTR.attempt]: event.attempt },
          },
          parent,
        );
        run.steps.set(event.step, span);
        return;
      }
      case "task:step:completed": {
        const run = live.get(event.runId);
        const span = run?.steps.get(event.step);
        if (run === undefined || span === undefined) return;
        run.steps.delete(event.step);
        span.end(now());
        return;
      }
      case "task:step:retry": {
        const run = live.get(event.runId);
        const span = run?.steps.get(event.step);
        if (run === undefined || span === undefined) return;
        run.steps.delete(event.step);
        const at = now();
        span.addEvent(
          "task.step.retry",
          {
            [ATTR.attempt]: event.attempt,
            [ATTR.wakeAt]: event.retryAt,
            "exception.message": event.error.message,
            ...errorAttributes(event.error),
          },
          at,
        );
        span.setStatus({ code: SpanStatusCode.ERROR, message: event.error.message });
        span.end(at);
        return;
      }
      case "task:waiting":
        endRun(event.runId, `waiting:${event.reason}`, {
          ...(event.wakeAt === null ? {} : { [ATTR.wakeAt]: event.wakeAt }),
          ...(event.eventType === undefined ? {} : { [ATTR.eventType]: event.eventType }),
        });
        return;
      case "task:completed":
        endRun(event.runId, "completed");
        return;
      case "task:failed":
        endRun(event.runId, "failed", errorAttributes(event.error), event.error.message);
        return;
      case "task:cancelled":
        endRun(event.runId, "cancelled");
        return;
      default:
        return;
    }
  };
}
