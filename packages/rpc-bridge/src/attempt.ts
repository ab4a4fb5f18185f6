import { type ErrorRecord, fromErrorRecord, toErrorRecord } from "@durablekit/handle-journal";
import { BridgeEndpoint } from "./endpoint";
import { bridgeErrorRecord } from "./errors";
import { disposeQuietly } from "./handle-table";
import { MAIN_MODULE } from "./module-graph";
import type { AttemptOutcome, Run } from "./run";

/** The Worker Loader binding's surface the executor uses (`env.LOADER`). */
export interface Loader {
  load(code: WorkerLoaderWorkerCode): WorkerStub;
}

/** What one attempt runs. */
export interface AttemptOptions {
  loader: Loader;
  modules: Record<string, string>;
  input: unknown;
  run: Run;
  cpuMs: number;
  compatibilityDate: string;
  compatibilityFlags: string[];
}

interface Evaluator {
  evaluate(
    input: unknown,
    bridge: BridgeEndpoint,
  ): Promise<{ v?: unknown; e?: ErrorRecord; u?: 1 }>;
}

function isolateFailed(what: string, error: unknown): AttemptOutcome {
  const why = error instanceof Error ? error.message : String(error);
  return { kind: "failed", error: bridgeErrorRecord("bridge/isolate-failed", `${what}: ${why}`) };
}

/** Normalizes a record from the isolate (untrusted) through handle-journal's own round trip. */
function normalize(record: ErrorRecord): ErrorRecord {
  try {
    return toErrorRecord(fromErrorRecord(record));
  } catch {
    return toErrorRecord(new Error("The program failed with an unreadable error."));
  }
}

/**
 * Runs one attempt: a fresh isolate from the Worker Loader (no network: `globalOutbound: null`;
 * no bindings: an empty `env`; the CPU limit), its `evaluate` raced against the run's own stop
 * (timeout, cancel, interrupt). The isolate is released and the run ended (every handle it still
 * held disposed) before this returns.
 */
export async function runAttempt(
  options: AttemptOptions,
): Promise<{ outcome: AttemptOutcome; disposed: number }> {
  const { run } = options;
  let outcome: AttemptOutcome;
  let worker: WorkerStub | undefined;
  let entrypoint: unknown;
  try {
    worker = options.loader.load({
      compatibilityDate: options.compatibilityDate,
      compatibilityFlags: options.compatibilityFlags,
      limits: { cpuMs: options.cpuMs },
      mainModule: MAIN_MODULE,
      modules: options.modules,
      env: {},
      globalOutbound: null,
    });
    entrypoint = worker.getEntrypoint(undefined, { limits: { cpuMs: options.cpuMs } });
    const evaluation = (entrypoint as unknown as Evaluator)
      .evaluate(options.input, new BridgeEndpoint(run))
      .then(
        (answer): AttemptOutcome => {
          if (answer.e !== undefined) {
            const error = normalize(answer.e);
            if (answer.u === 1) {
              error.$error = {
                ...error.$error,
                code: "bridge/unhandled-rejection",
                message: `The program left a rejected promise unhandled: ${error.$error.message}`,
              };
            }
            return { kind: "failed", error };
          }
          return { kind: "completed", value: answer.v };
        },
        (error: unknown) => isolateFailed("The program's isolate failed", error),
      );
    outcome = await Promise.race([evaluation, run.stopped]);
  } catch (error) {
    outcome = isolateFailed("The program's isolate could not start", error);
  } finally {
    disposeQuietly(entrypoint);
    disposeQuietly(worker);
  }
  return { outcome, disposed: run.end() };
}
