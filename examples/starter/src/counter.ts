import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { sseResponse } from "@durablekit/sse";
import { Streams } from "@durablekit/streams";
import { type TaskDefinitions, type TaskStep, Tasks } from "@durablekit/tasks";
import type { Env } from "./env";

/**
 * Input of `count@v1`: how many chunks to write, the stream that receives them, and how long each
 * step waits before its chunk (`delayMs`, 0 by default: a slow count lets a restart land mid-step).
 */
export interface CountInput {
  steps: number;
  stream: string;
  delayMs?: number;
}

/** What `status` answers: the run's state and each step's state and attempts (`GET /count/:runId`). */
export interface CountStatus {
  runId: string;
  state: string;
  steps: Array<{ name: string; state: string; attempt: number }>;
}

/** What `start` answers: the run, and the stream a client follows over SSE. */
export interface Started {
  runId: string;
  stream: string;
}

/**
 * What a test build of the object passes its parts: the clock (`now`) and a wrapper of the task
 * definitions (`instrument`). `TestingProbe` of `@durablekit/testing` gives both (see
 * `test/crash-counter.ts`); production passes nothing.
 */
export interface CounterTestHooks {
  now?: () => number;
  instrument?: <Definitions extends TaskDefinitions>(definitions: Definitions) => Definitions;
}

/** The object's task definitions: `count@v1` writes its chunks to `streams` as the run's producer. */
function countDefinitions(streams: Streams) {
  return {
    "count@v1": async (input: CountInput, step: TaskStep) => {
      // ── A producer per run: a step re-run after a crash writes its chunk once ──
      const writer = () => streams.open(input.stream, { producer: { id: step.runId, epoch: 0 } });
      for (let i = 0; i < input.steps; i++) {
        await step.do(`chunk-${i}`, async () => {
          if (input.delayMs) await new Promise((resolve) => setTimeout(resolve, input.delayMs));
          return writer().append({ i }, { producerSeq: i });
        });
      }
      // Settling is idempotent, so a replayed close is a no-op; subscribers get `event: done`.
      await step.do("close", async () => {
        writer().close();
      });
      return { written: input.steps };
    },
  } satisfies TaskDefinitions;
}

/**
 * One SQLite Durable Object composing three durablekit parts: `Tasks` runs `count@v1`, which writes
 * `{ "i": i }` chunks to a `Streams` stream exactly once each (producer = the run, producer seq = i),
 * then closes it; `sseResponse` serves the stream to any `EventSource`. `Alarms` shares the object's
 * one alarm between the task engine and the streams sweep.
 */
export class Counter extends DurableObject<Env> {
  readonly streams: Streams;
  readonly tasks: Tasks<ReturnType<typeof countDefinitions>>;
  readonly alarms: Alarms;

  constructor(ctx: DurableObjectState, env: Env, hooks: CounterTestHooks = {}) {
    super(ctx, env);
    this.streams = new Streams(ctx, { now: hooks.now });
    const definitions = countDefinitions(this.streams);
    this.tasks = new Tasks(ctx, {
      definitions: hooks.instrument ? hooks.instrument(definitions) : definitions,
      now: hooks.now,
    });
    this.alarms = new Alarms(ctx, { parts: [this.tasks, this.streams], now: hooks.now });
  }

  override alarm() {
    return this.alarms.alarm();
  }

  /** Starts `count@v1`; its stream exists before this returns, so a subscriber never meets a 404. */
  async start(steps: number, delayMs = 0): Promise<Started> {
    const runId = crypto.randomUUID();
    const stream = `count:${runId}`;
    this.streams.open(stream, { producer: { id: runId, epoch: 0 } });
    await this.tasks.run("count@v1", { steps, stream, delayMs }, { runId });
    return { runId, stream };
  }

  /** The run's state and its steps' (`null` for an unknown run). */
  status(runId: string): CountStatus | null {
    const run = this.tasks.get(runId);
    if (run === null) return null;
    const steps = (this.tasks.steps(runId) ?? []).map(({ name, state, attempt }) => ({
      name,
      state,
      attempt,
    }));
    return { runId, state: run.state, steps };
  }

  /** `GET /streams/:id`: the stream as Server-Sent Events, resuming after `Last-Event-ID`. */
  override async fetch(request: Request): Promise<Response> {
    const id = decodeURIComponent(new URL(request.url).pathname.slice("/streams/".length));
    return sseResponse(this.streams, id, { request });
  }
}
