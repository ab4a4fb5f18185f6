import { isWellFormedName } from "@durablekit/compose";
import { type Executor, isBridgeError } from "@durablekit/rpc-bridge";
import type { Streams } from "@durablekit/streams";
import {
  defineTask,
  isTasksError,
  NonRetryableError,
  type TaskStep,
  type TaskTriggerInput,
} from "@durablekit/tasks";
import { describeValue } from "./http";
import { type HttpExecution, httpForm } from "./programs";

/** Input of `demo.count@v1`. */
export interface CountInput {
  /** How many steps (`step-0` … `step-<steps-1>`), 0–1000. */
  steps: number;
  /** How long each step waits, 0–60,000 ms. */
  stepMs?: number;
  /** A stream of the same object that each step appends `{ "i": i }` to, exactly once (a stream id: 1–256 characters, no lone surrogate). */
  stream?: string;
}

/** Input of `demo.flaky@v1`. */
export interface FlakyInput {
  /** How many attempts of its `charge` step fail before one succeeds, 0–5. */
  failures: number;
  /** The back-off between them, 1–60,000 ms (500). */
  retryMs?: number;
}

/** Input of `demo.approval@v1`. */
export interface ApprovalInput {
  /** How long to wait for the `approve` event, 1 ms–30 days; without it, the run waits until approved or cancelled. */
  timeoutMs?: number;
}

/** Input of `demo.program@v1`. */
/** The input of `demo.serial@v1`: its key (one run of a key at a time) and how long it works. */
export interface SerialInput {
  key: string;
  /** How long its one step works, in milliseconds (default 0). */
  ms?: number;
}

export interface ProgramInput {
  /** The program: an ES module whose default export runs, importing the demo host modules. */
  code: string;
}

/** Input of `demo.fanout@v1`. */
export interface FanoutInput {
  /** How many child runs, 1–1000: child `i` runs in shard object `shard-<i mod objects>`. */
  children: number;
  /** Over how many shard objects, 1–100 (default: `children`, at most 100). */
  objects?: number;
  /** How long each child's work takes, 0–10,000 ms (0). */
  ms?: number;
  /** A durable sleep between two starts, 0–1,000 ms (0): a fan-out that takes its time. */
  spacingMs?: number;
}

/** What `demo.fanout@v1` completes with: each child's `i²` in order, and how many children did not complete. */
export interface FanoutResult {
  children: number;
  objects: number;
  squares: Array<number | null>;
  notCompleted: number;
}

/** The most shard objects a fan-out spreads over. */
export const MAX_FANOUT_OBJECTS = 100;

/** What the demo definitions need from the object that hosts them. */
export interface DemoTaskHost {
  readonly streams: Streams;
  /** Runs `demo.program@v1`'s programs (replay runs over the run's step journal). */
  readonly executor: Executor;
  /** Counts one real execution of a step (not a journal replay) in the side table. */
  countExecution(runId: string, step: string): void;
  /** The JSON messages of a protocol stream between two seqs, `(from, to]` (`demo.feed@v1`). */
  readFeed(source: string, from: number, to: number): Promise<unknown[]>;
}

/** What `demo.feed@v1` completes with: the batch it took and what was in it. */
export interface FeedResult {
  source: string;
  from: number;
  to: number;
  /** Messages read: `to - from`. */
  count: number;
  first: unknown;
  last: unknown;
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/** The execution id of a `demo.program@v1` run's program: the same on every attempt. */
export function programExecutionId(runId: string): string {
  return `program:${runId}`;
}

/**
 * Runs a `demo.program@v1` program in a step, or re-attaches to it: `execute` with the run's
 * execution id and step journal drives a run an eviction cut off from its journal, and returns an
 * interrupted or ended one as it is. With `answer`, the interrupt at `answer.key` is resumed with
 * `answer.value`. A program the bridge refuses (it does not parse, imports an unknown module) fails
 * the step without retries.
 * @throws NonRetryableError naming the bridge's code, for a refused program.
 */
async function runProgram(
  executor: Executor,
  step: TaskStep,
  code: string,
  answer?: { key: string; value: unknown },
): Promise<HttpExecution> {
  const journal = step.journal("program");
  const id = programExecutionId(step.runId);
  try {
    let execution = await executor.execute(code, undefined, {
      id,
      onInterrupt: "replay",
      journal,
    });
    if (answer && execution.state === "interrupted" && execution.interrupt?.key === answer.key) {
      execution = await executor.resume(id, answer.value, { journal });
    }
    return httpForm(execution);
  } catch (error) {
    if (!isBridgeError(error)) throw error;
    throw new NonRetryableError(`${error.code}: ${error.message}`, { cause: error });
  }
}

/**
 * The demo's task definitions. `demo.count@v1` runs `steps` steps; each counts its real execution,
 * waits `stepMs`, and appends `{ "i": i }` to `stream` as that stream's producer `<runId>` with
 * producer seq `i`, so a step re-run after a crash is answered as a duplicate and the stream holds
 * each `i` exactly once; the last step's append also closes the stream, so its readers end with
 * `done` (a run that fails or is cancelled ends it as errored: see the workspace). `demo.flaky@v1`
 * fails its `charge` step `failures` times, `retryMs` apart, then charges and completes: a run
 * whose timeline shows retries. `demo.approval@v1` waits for an `approve` event and completes with
 * its payload.
 * `demo.program@v1` runs a program inside the task: a replay run whose calls are rows of the task's
 * journal (`step.journal("program")`); each time the program is interrupted (`approval()`), the task
 * waits for a `resume` event and resumes the program with its payload, so the program's host calls
 * run once each across evictions and restarts. Completes with the execution in its HTTP form.
 * `demo.serial@v1` works `ms` milliseconds in one step, one run per `key` at a time (the others
 * queue); `demo.tick@v1` is what the demo's cron schedules start.
 */
export function demoTaskDefinitions(host: DemoTaskHost) {
  return {
    "demo.fanout@v1": async (input: FanoutInput, step: TaskStep): Promise<FanoutResult> => {
      const objects = input.objects ?? Math.min(input.children, MAX_FANOUT_OBJECTS);
      const runs = [];
      for (let i = 0; i < input.children; i++) {
        if (i > 0 && input.spacingMs) await step.sleep(`gap ${i}`, input.spacingMs);
        const target = { binding: "SHARD", name: `shard-${i % objects}` };
        runs.push(
          await step.startChild(`child ${i}`, target, "demo.shard@v1", { i, ms: input.ms ?? 0 }),
        );
      }
      const outcomes = await step.awaitChildren("fan-in", runs);
      const squares = outcomes.map((o) =>
        o.state === "completed" ? (o.result as { square: number }).square : null,
      );
      return {
        children: input.children,
        objects,
        squares,
        notCompleted: squares.filter((square) => square === null).length,
      };
    },
    "demo.count@v1": async (input: CountInput, step: TaskStep) => {
      const last = input.steps - 1;
      for (let i = 0; i < input.steps; i++) {
        await step.do(`step-${i}`, async ({ signal }) => {
          host.countExecution(step.runId, `step-${i}`);
          // Opened before the wait: the stream exists as soon as the first step starts.
          const writer =
            input.stream === undefined
              ? null
              : host.streams.open(input.stream, { producer: { id: step.runId, epoch: 0 } });
          if (input.stepMs) await wait(input.stepMs, signal);
          // The last step appends and closes in one write (readers get its chunk, then `done`);
          // producer seq `i` makes a re-run of either write a duplicate, answered from the log.
          if (i === last) writer?.close({ chunks: [{ i }], producerSeq: i });
          else writer?.append({ i }, { producerSeq: i });
          return i;
        });
      }
      // No steps: the stream is opened and closed at once (on a replay, closing it again is a no-op).
      if (input.steps === 0 && input.stream !== undefined) host.streams.open(input.stream).close();
      return { counted: input.steps };
    },
    "demo.flaky@v1": async (input: FlakyInput, step: TaskStep) => {
      const charged = await step.do(
        "charge",
        {
          retries: {
            limit: input.failures + 1,
            delayMs: input.retryMs ?? 500,
            backoff: "constant",
          },
        },
        ({ attempt }) => {
          host.countExecution(step.runId, "charge");
          if (attempt <= input.failures) {
            throw new Error(`the card was declined (attempt ${attempt} of ${input.failures + 1})`);
          }
          return attempt;
        },
      );
      return step.do("receipt", () => ({ charged: true, attempts: charged }));
    },
    // One run of a key in progress at a time: the others wait, queued, in start order.
    "demo.serial@v1": defineTask({
      handler: async (input: SerialInput, step: TaskStep) =>
        step.do("work", async ({ signal }) => {
          host.countExecution(step.runId, "work");
          if (input.ms) await wait(input.ms, signal);
          return { key: input.key };
        }),
      key: (input) => input.key,
      concurrency: { limit: 1 },
    }),
    // What the feed subscription starts (`POST /feeds`): one run per appended batch of a
    // `feed/*` stream, reading the batch in one step.
    "demo.feed@v1": async (input: TaskTriggerInput, step: TaskStep): Promise<FeedResult> =>
      step.do("read", async () => {
        host.countExecution(step.runId, "read");
        const messages = await host.readFeed(input.source, input.from, input.to);
        return {
          source: input.source,
          from: input.from,
          to: input.to,
          count: messages.length,
          first: messages[0] ?? null,
          last: messages.at(-1) ?? null,
        };
      }),
    // What the demo's schedules start (`POST /schedules`): one step that notes when it ran.
    "demo.tick@v1": async (_input: unknown, step: TaskStep) =>
      step.do("tick", () => {
        host.countExecution(step.runId, "tick");
        return { ranAt: new Date().toISOString() };
      }),
    "demo.approval@v1": async (input: ApprovalInput | undefined, step: TaskStep) =>
      step.waitForEvent("approve", {
        type: "approve",
        ...(input?.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
      }),
    "demo.program@v1": async (input: ProgramInput, step: TaskStep) => {
      let execution = await step.do("program", () => runProgram(host.executor, step, input.code));
      for (let i = 1; execution.state === "interrupted" && execution.interrupt; i++) {
        const { key } = execution.interrupt;
        const value = await step.waitForEvent(`resume ${i}`, { type: "resume" });
        execution = await step.do(`program ${i}`, () =>
          runProgram(host.executor, step, input.code, { key, value }),
        );
      }
      return execution;
    },
  };
}

/** The names of the demo definitions. */
export type DemoDefinition = keyof ReturnType<typeof demoTaskDefinitions>;

/** The longest stream id (the streams package's limit), checked when a run starts, not at its first step. */
const MAX_STREAM_ID = 256;

/** The longest approval wait: 30 days. */
export const MAX_APPROVAL_MS = 30 * 24 * 60 * 60 * 1000;

/** The longest cancel reason the demo stores. */
export const MAX_REASON_LENGTH = 1_000;

/** The shape of each definition's input, as error messages show it. */
export const INPUT_SHAPES: Record<DemoDefinition, string> = {
  "demo.count@v1": '{ "steps": 0–1000, "stepMs"?: 0–60000, "stream"?: "<stream id>" }',
  "demo.flaky@v1": '{ "failures": 0–5, "retryMs"?: 1–60000 }',
  "demo.approval@v1": `{ "timeoutMs"?: 1–${MAX_APPROVAL_MS} }`,
  "demo.program@v1": '{ "code": "<ES module source>" }',
  "demo.serial@v1": '{ "key": "<1–64 characters>", "ms"?: 0–60000 }',
  "demo.tick@v1": "nothing, or any JSON value",
  "demo.feed@v1":
    "nothing: its runs are started by the feed subscription (POST /feeds), one per appended batch",
  "demo.fanout@v1":
    '{ "children": 1–1000, "objects"?: 1–100, "ms"?: 0–10000, "spacingMs"?: 0–1000 }',
};

function isIntegerIn(value: unknown, min: number, max: number): boolean {
  return Number.isInteger(value) && (value as number) >= min && (value as number) <= max;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What is wrong with a `demo.count@v1` input, or null. */
function countProblem(input: unknown): string | null {
  if (!isObject(input)) {
    return `demo.count@v1 needs "input": ${INPUT_SHAPES["demo.count@v1"]}; got ${describeValue(input)} as "input".`;
  }
  const { steps, stepMs, stream } = input;
  if (!isIntegerIn(steps, 0, 1000)) {
    return `"input.steps" must be an integer from 0 to 1000; got ${describeValue(steps)}.`;
  }
  if (stepMs !== undefined && !isIntegerIn(stepMs, 0, 60_000)) {
    return `"input.stepMs" must be an integer from 0 to 60000 (milliseconds); got ${describeValue(stepMs)}.`;
  }
  if (stream !== undefined && !isWellFormedName(stream, MAX_STREAM_ID)) {
    return `"input.stream" must be a stream id of 1–${MAX_STREAM_ID} characters without lone surrogates; got ${describeValue(stream)}.`;
  }
  return null;
}

/** What is wrong with a `demo.flaky@v1` input, or null. */
function flakyProblem(input: unknown): string | null {
  if (!isObject(input)) {
    return `demo.flaky@v1 needs "input": ${INPUT_SHAPES["demo.flaky@v1"]}; got ${describeValue(input)} as "input".`;
  }
  const { failures, retryMs } = input;
  if (!isIntegerIn(failures, 0, 5)) {
    return `"input.failures" must be an integer from 0 to 5; got ${describeValue(failures)}.`;
  }
  if (retryMs !== undefined && !isIntegerIn(retryMs, 1, 60_000)) {
    return `"input.retryMs" must be an integer from 1 to 60000 (milliseconds); got ${describeValue(retryMs)}.`;
  }
  return null;
}

/** What is wrong with a `demo.approval@v1` input (nothing is fine), or null. */
function approvalProblem(input: unknown): string | null {
  if (input === undefined || input === null) return null;
  if (!isObject(input)) {
    return `demo.approval@v1 takes no "input" or "input": ${INPUT_SHAPES["demo.approval@v1"]}; got ${describeValue(input)} as "input".`;
  }
  const { timeoutMs } = input;
  if (timeoutMs !== undefined && !isIntegerIn(timeoutMs, 1, MAX_APPROVAL_MS)) {
    return `"input.timeoutMs" must be an integer from 1 to ${MAX_APPROVAL_MS} (milliseconds, 30 days); got ${describeValue(timeoutMs)}.`;
  }
  return null;
}

/** What is wrong with a `demo.program@v1` input, or null. */
function programProblem(input: unknown): string | null {
  if (!isObject(input)) {
    return `demo.program@v1 needs "input": ${INPUT_SHAPES["demo.program@v1"]}; got ${describeValue(input)} as "input".`;
  }
  const extra = Object.keys(input).filter((key) => key !== "code");
  if (extra.length > 0) {
    return `demo.program@v1's "input" has only "code"; got ${extra.map((key) => JSON.stringify(key)).join(", ")} too.`;
  }
  if (typeof input.code !== "string" || input.code.length === 0) {
    return `"input.code" must be a non-empty string (an ES module with a default export); got ${describeValue(input.code)}.`;
  }
  return null;
}

/** What is wrong with a `demo.fanout@v1` input, or null. */
function fanoutProblem(input: unknown): string | null {
  if (!isObject(input)) {
    return `demo.fanout@v1 needs "input": ${INPUT_SHAPES["demo.fanout@v1"]}; got ${describeValue(input)} as "input".`;
  }
  const fields = ["children", "objects", "ms", "spacingMs"];
  const extra = Object.keys(input).filter((key) => !fields.includes(key));
  if (extra.length > 0) {
    return `demo.fanout@v1's "input" has "children", "objects", "ms" and "spacingMs"; got ${extra.map((key) => JSON.stringify(key)).join(", ")} too.`;
  }
  const { children, objects, ms, spacingMs } = input;
  if (!isIntegerIn(children, 1, 1000)) {
    return `"input.children" must be an integer from 1 to 1000; got ${describeValue(children)}.`;
  }
  if (objects !== undefined && !isIntegerIn(objects, 1, MAX_FANOUT_OBJECTS)) {
    return `"input.objects" must be an integer from 1 to ${MAX_FANOUT_OBJECTS}; got ${describeValue(objects)}.`;
  }
  if (ms !== undefined && !isIntegerIn(ms, 0, 10_000)) {
    return `"input.ms" must be an integer from 0 to 10000 (milliseconds); got ${describeValue(ms)}.`;
  }
  if (spacingMs !== undefined && !isIntegerIn(spacingMs, 0, 1000)) {
    return `"input.spacingMs" must be an integer from 0 to 1000 (milliseconds); got ${describeValue(spacingMs)}.`;
  }
  return null;
}

/** What is wrong with a `demo.serial@v1` input, or null. */
function serialProblem(input: unknown): string | null {
  if (!isObject(input)) {
    return `demo.serial@v1 needs "input": ${INPUT_SHAPES["demo.serial@v1"]}; got ${describeValue(input)} as "input".`;
  }
  const { key, ms } = input;
  if (typeof key !== "string" || key.length === 0 || key.length > 64 || key.startsWith("__dk")) {
    return `"input.key" must be a string of 1–64 characters (not starting with "__dk"); got ${describeValue(key)}.`;
  }
  if (ms !== undefined && !isIntegerIn(ms, 0, 60_000)) {
    return `"input.ms" must be an integer from 0 to 60000 (milliseconds); got ${describeValue(ms)}.`;
  }
  return null;
}

/** A message saying what is wrong with a definition's input, or null when it is acceptable. */
export function checkInput(definition: string, input: unknown): string | null {
  if (definition === "demo.feed@v1") {
    return "demo.feed@v1 runs are started by the feed subscription, one per batch appended to a feed/* stream: POST /feeds, then append to /v1/stream/feed/<name>.";
  }
  if (definition === "demo.count@v1") return countProblem(input);
  if (definition === "demo.flaky@v1") return flakyProblem(input);
  if (definition === "demo.approval@v1") return approvalProblem(input);
  if (definition === "demo.program@v1") return programProblem(input);
  if (definition === "demo.fanout@v1") return fanoutProblem(input);
  if (definition === "demo.serial@v1") return serialProblem(input);
  return null;
}

/** The stream a `demo.count@v1` input writes, if any (after {@link checkInput} accepted it). */
export function countStream(definition: string, input: unknown): string | null {
  if (definition !== "demo.count@v1") return null;
  return (input as CountInput).stream ?? null;
}

/** The outcome of a task call made over RPC: a value, or a coded error with its HTTP status. */
export type TaskCall<T> =
  | { ok: true; value: T }
  | { ok: false; status: number; code: string; message: string };

/** A coded failure outcome. */
export function failure(status: number, code: string, message: string): TaskCall<never> {
  return { ok: false, status, code, message };
}

/** The outcome for a new run whose `stream` an earlier run already wrote (and closed). */
export function streamTaken(stream: string): TaskCall<never> {
  return failure(
    409,
    "demo/stream-exists",
    `Stream "${stream}" already exists: a run writes its own stream and closes it when it ends. Name a new "input.stream", or send the earlier run's "runId" or "idempotencyKey" to join that run.`,
  );
}

/** The outcome for a run id that names no run. */
export function runNotFound(runId: string): TaskCall<never> {
  return failure(404, "tasks/not-found", `No run "${runId}" exists; check the run id.`);
}

const STATUS: Record<string, number> = {
  "tasks/unknown-definition": 404,
  "tasks/not-found": 404,
  "tasks/invalid-argument": 400,
  "tasks/unserializable": 400,
  "tasks/too-deep": 400,
  "tasks/too-large": 413,
  "tasks/conflict": 409,
  "tasks/closed": 409,
  "tasks/busy": 429,
  "tasks/rate-limited": 429,
};

/**
 * Runs a task call and turns a `TasksError` into a coded outcome (the HTTP layer answers it as is);
 * anything else is rethrown.
 */
export async function taskCall<T>(fn: () => T | Promise<T>): Promise<TaskCall<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    if (!isTasksError(error)) throw error;
    return {
      ok: false,
      status: STATUS[error.code] ?? 500,
      code: error.code,
      message: error.message,
    };
  }
}
