import { isWellFormedName } from "@durablekit/compose";
import type { Streams } from "@durablekit/streams";
import { isTasksError, type TaskStep } from "@durablekit/tasks";

/** Input of `demo.count@v1`. */
export interface CountInput {
  /** How many steps (`step-0` … `step-<steps-1>`), 0–1000. */
  steps: number;
  /** How long each step waits, 0–60,000 ms. */
  stepMs?: number;
  /** A stream of the same object that each step appends `{ "i": i }` to, exactly once (a stream id: 1–256 characters, no lone surrogate). */
  stream?: string;
}

/** Input of `demo.approval@v1`. */
export interface ApprovalInput {
  /** How long to wait for the `approve` event, 1 ms–30 days; without it, the run waits until approved or cancelled. */
  timeoutMs?: number;
}

/** What the demo definitions need from the object that hosts them. */
export interface DemoTaskHost {
  readonly streams: Streams;
  /** Counts one real execution of a step (not a journal replay) in the side table. */
  countExecution(runId: string, step: string): void;
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

/**
 * The demo's task definitions. `demo.count@v1` runs `steps` steps; each counts its real execution,
 * waits `stepMs`, and appends `{ "i": i }` to `stream` as that stream's producer `<runId>` with
 * producer seq `i`, so a step re-run after a crash is answered as a duplicate and the stream holds
 * each `i` exactly once. `demo.approval@v1` waits for an `approve` event and completes with its payload.
 */
export function demoTaskDefinitions(host: DemoTaskHost) {
  return {
    "demo.count@v1": async (input: CountInput, step: TaskStep) => {
      for (let i = 0; i < input.steps; i++) {
        await step.do(`step-${i}`, async ({ signal }) => {
          host.countExecution(step.runId, `step-${i}`);
          if (input.stepMs) await wait(input.stepMs, signal);
          if (input.stream !== undefined) {
            const writer = host.streams.open(input.stream, {
              producer: { id: step.runId, epoch: 0 },
            });
            writer.append({ i }, { producerSeq: i });
          }
          return i;
        });
      }
      return { counted: input.steps };
    },
    "demo.approval@v1": async (input: ApprovalInput | undefined, step: TaskStep) =>
      step.waitForEvent("approve", {
        type: "approve",
        ...(input?.timeoutMs === undefined ? {} : { timeoutMs: input.timeoutMs }),
      }),
  };
}

/** The names of the demo definitions. */
export type DemoDefinition = keyof ReturnType<typeof demoTaskDefinitions>;

function isCount(input: unknown): input is CountInput {
  if (typeof input !== "object" || input === null) return false;
  const { steps, stepMs, stream } = input as Record<string, unknown>;
  return (
    Number.isInteger(steps) &&
    (steps as number) >= 0 &&
    (steps as number) <= 1000 &&
    (stepMs === undefined ||
      (Number.isInteger(stepMs) && (stepMs as number) >= 0 && (stepMs as number) <= 60_000)) &&
    (stream === undefined || isWellFormedName(stream, MAX_STREAM_ID))
  );
}

/** The longest stream id (the streams package's limit), checked when a run starts, not at its first step. */
const MAX_STREAM_ID = 256;

/** The longest approval wait: 30 days. */
export const MAX_APPROVAL_MS = 30 * 24 * 60 * 60 * 1000;

/** The longest cancel reason the demo stores. */
export const MAX_REASON_LENGTH = 1_000;

/** A message saying what is wrong with a definition's input, or null when it is acceptable. */
export function checkInput(definition: string, input: unknown): string | null {
  if (definition === "demo.count@v1" && !isCount(input)) {
    return 'demo.count@v1 takes { "steps": 0–1000, "stepMs"?: 0–60000, "stream"?: "<stream id, 1–256 characters>" }.';
  }
  if (definition === "demo.approval@v1" && input !== undefined && input !== null) {
    const { timeoutMs } = input as Record<string, unknown>;
    const badTimeout =
      timeoutMs !== undefined &&
      (!Number.isInteger(timeoutMs) ||
        (timeoutMs as number) < 1 ||
        (timeoutMs as number) > MAX_APPROVAL_MS);
    if (typeof input !== "object" || Array.isArray(input) || badTimeout) {
      return `demo.approval@v1 takes nothing or { "timeoutMs": 1–${MAX_APPROVAL_MS} }.`;
    }
  }
  return null;
}

/** The outcome of a task call made over RPC: a value, or a coded error with its HTTP status. */
export type TaskCall<T> =
  | { ok: true; value: T }
  | { ok: false; status: number; code: string; message: string };

/** A coded failure outcome. */
export function failure(status: number, code: string, message: string): TaskCall<never> {
  return { ok: false, status, code, message };
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
