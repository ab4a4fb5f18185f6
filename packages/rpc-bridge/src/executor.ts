import { utf8ByteLength } from "@durablekit/handle-journal";
import { runAttempt } from "./attempt";
import type { Access, InterruptPolicy } from "./context";
import { BridgeError } from "./errors";
import type { BridgeEvent } from "./events";
import type { Execution, ExecutionRecord } from "./execution";
import { checkData, restartRefusal, type Settled, settleOutcome } from "./execution-end";
import { ExecutionStore } from "./execution-store";
import {
  checkAccess,
  checkPolicy,
  DEFAULT_COMPATIBILITY_DATE,
  type ExecuteOptions,
  type ExecutorOptions,
} from "./executor-options";
import { type Limits, resolveLimits } from "./limits";
import { buildModuleGraph } from "./module-graph";
import { createModuleRegistry, type ModuleRegistry } from "./module-registry";
import { planRecovery } from "./recovery";
import { type AttemptOutcome, Run } from "./run";

interface Drive {
  id: string;
  modules: Record<string, string>;
  input: unknown;
  access: Access;
  onInterrupt: InterruptPolicy;
  attempt: number;
}

/** How long after a run's timeout the recovery alarm is asked for. */
const ALARM_GRACE_MS = 1_000;

/**
 * Runs program source in Worker Loader isolates against host modules, one bridge per run. Create
 * one per Durable Object (it owns the `dk_bridge_*` tables of its `sql`).
 */
export class Executor {
  readonly #options: ExecutorOptions;
  readonly #registry: ModuleRegistry;
  readonly #limits: Limits;
  readonly #store: ExecutionStore | undefined;
  readonly #live = new Map<string, Run>();
  readonly #access: Access;
  readonly #onInterrupt: InterruptPolicy;

  constructor(options: ExecutorOptions) {
    this.#options = options;
    this.#registry = createModuleRegistry(options.modules);
    this.#limits = resolveLimits(options.limits);
    this.#access = checkAccess(options.access ?? "read-write");
    this.#onInterrupt = checkPolicy(options.onInterrupt ?? "fail");
    this.#store = options.sql ? new ExecutionStore(options.sql) : undefined;
  }

  /** The limits every run gets. */
  get limits(): Readonly<Limits> {
    return this.#limits;
  }

  /** Ids of the executions running in this instance now. */
  get running(): string[] {
    return [...this.#live.keys()];
  }

  /**
   * Runs `source` (an ES module whose default export takes `input`) to its end and answers how it
   * ended. A program that cannot run (bad import, no default export, input over the limit) is
   * refused with a thrown error before anything runs or is recorded.
   * @throws BridgeError `bridge/module-not-found`, `bridge/module-private`, `bridge/invalid-program`,
   * `bridge/limit-input-bytes`, `bridge/unserializable`, `bridge/execution-exists`,
   * `bridge/replay-unsupported`, `bridge/invalid-options`.
   */
  async execute(source: string, input?: unknown, options: ExecuteOptions = {}): Promise<Execution> {
    const onInterrupt = checkPolicy(options.onInterrupt ?? this.#onInterrupt);
    const access = checkAccess(options.access ?? this.#access);
    if (typeof source !== "string") {
      throw new BridgeError("bridge/invalid-program", "The program source must be a string.");
    }
    if (utf8ByteLength(source) > this.#limits.maxSourceBytes) {
      throw new BridgeError(
        "bridge/invalid-program",
        `The program is larger than ${this.#limits.maxSourceBytes} bytes (maxSourceBytes).`,
      );
    }
    const modules = buildModuleGraph(this.#registry, source);
    const inputText =
      checkData(
        input,
        this.#limits.maxInputBytes,
        "input",
        "bridge/limit-input-bytes",
        "maxInputBytes",
        this.#store !== undefined,
      ) ?? "";
    const id = options.id ?? crypto.randomUUID();
    if (this.#live.has(id) || this.#store?.has(id)) {
      throw new BridgeError(
        "bridge/execution-exists",
        `An execution with id "${id}" already exists; use another id or read it with get().`,
      );
    }
    const now = Date.now();
    this.#store?.insert({ id, onInterrupt, access, source, input: inputText, now });
    this.#armRecoveryAlarm(now);
    const signal = options.signal;
    const onAbort = () => this.cancel(id, "the execute() signal aborted");
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      if (signal?.aborted) onAbort();
      return await this.#drive({ id, modules, input, access, onInterrupt, attempt: 1 });
    } finally {
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** The stored record of an execution, or null. @throws BridgeError `bridge/no-storage` without `sql`. */
  get(executionId: string): ExecutionRecord | null {
    return this.#requireStore().get(executionId);
  }

  /** Cancels a running execution of this instance; false when none is running under that id. */
  cancel(executionId: string, reason = "cancelled"): boolean {
    const run = this.#live.get(executionId);
    if (!run) return false;
    run.stop({ kind: "cancelled", reason });
    return true;
  }

  /**
   * Settles executions a previous instance left running (its Durable Object restarted under them):
   * `"fail"` ones fail with `bridge/interrupted`; `"restart"` ones run again from the top (a new
   * attempt), unless a call marked unsafeToRepeat already ran or `maxAttempts` is used up. Runs of
   * this instance are left alone, so it is safe to call at any time. Resolves when every restarted
   * run has ended.
   * @throws BridgeError `bridge/no-storage` without `sql`.
   */
  async recover(): Promise<Execution[]> {
    const store = this.#requireStore();
    const pending: Array<Execution | Promise<Execution>> = [];
    for (const row of store.running()) {
      if (this.#live.has(row.id)) continue;
      const plan = planRecovery(row, this.#registry, this.#limits.maxAttempts);
      if (plan.action === "fail") {
        pending.push(this.#end(row.id, row.attempt, 0, { state: "failed", error: plan.error }));
        continue;
      }
      const now = Date.now();
      store.restart(row.id, row.attempt + 1, now);
      this.#armRecoveryAlarm(now);
      pending.push(
        this.#drive({
          id: row.id,
          modules: plan.modules,
          input: plan.input,
          access: row.access,
          onInterrupt: "restart",
          attempt: row.attempt + 1,
        }),
      );
    }
    return Promise.all(pending);
  }

  /**
   * When the host should next call {@link alarm}: now if a previous instance left executions
   * running, else the timeout of the earliest run of this instance; null when nothing runs.
   */
  nextWakeAt(): number | null {
    if (!this.#store) return null;
    let at: number | null = null;
    for (const row of this.#store.running()) {
      const run = this.#live.get(row.id);
      const when = run ? run.deadline + ALARM_GRACE_MS : Date.now();
      if (at === null || when < at) at = when;
    }
    return at;
  }

  /** The alarm part: recovers executions left running (see {@link recover}). */
  async alarm(): Promise<void> {
    if (this.#store) await this.recover();
  }

  /** Deletes the records of executions that ended before `before` (epoch ms); returns how many. */
  prune(before: number): number {
    return this.#requireStore().prune(before);
  }

  #requireStore(): ExecutionStore {
    if (!this.#store) {
      throw new BridgeError(
        "bridge/no-storage",
        "This executor has no sql storage; pass createExecutor({ sql: ctx.storage.sql, … }) to record executions.",
      );
    }
    return this.#store;
  }

  /** Asks for the alarm that recovers a run this instance may not live to finish. */
  #armRecoveryAlarm(now: number): void {
    if (this.#store) this.#options.armAlarm?.(now + this.#limits.runTimeoutMs + ALARM_GRACE_MS);
  }

  #emit(event: BridgeEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // A listener's failure is its own.
    }
  }

  async #drive(drive: Drive): Promise<Execution> {
    let unsafeCall: string | undefined;
    for (let attempt = drive.attempt; ; attempt++) {
      if (attempt > drive.attempt) this.#store?.restart(drive.id, attempt, Date.now());
      const run = new Run({
        executionId: drive.id,
        attempt,
        access: drive.access,
        limits: this.#limits,
        registry: this.#registry,
        onEvent: this.#options.onEvent,
        onUnsafeCall: (label) => {
          if (drive.onInterrupt !== "restart" || unsafeCall !== undefined) return;
          unsafeCall = label;
          this.#store?.markUnsafe(drive.id, label);
        },
      });
      this.#live.set(drive.id, run);
      this.#emit({ type: "bridge:execution", executionId: drive.id, state: "running", attempt });
      let result: { outcome: AttemptOutcome; disposed: number };
      try {
        result = await runAttempt({
          loader: this.#options.loader,
          modules: drive.modules,
          input: drive.input,
          run,
          cpuMs: this.#limits.cpuMs,
          compatibilityDate: this.#options.compatibilityDate ?? DEFAULT_COMPATIBILITY_DATE,
          compatibilityFlags: this.#options.compatibilityFlags ?? [],
        });
      } finally {
        this.#live.delete(drive.id);
      }
      const { outcome, disposed } = result;
      if (outcome.kind === "interrupted" && drive.onInterrupt === "restart") {
        const refusal = restartRefusal(
          unsafeCall,
          attempt,
          this.#limits.maxAttempts,
          outcome.reason,
        );
        if (!refusal) continue;
        return this.#end(
          drive.id,
          attempt,
          run.calls,
          { state: "failed", error: refusal },
          disposed,
        );
      }
      const settled = settleOutcome(
        outcome,
        this.#limits.maxResultBytes,
        this.#store !== undefined,
      );
      return this.#end(drive.id, attempt, run.calls, settled, disposed);
    }
  }

  #end(id: string, attempt: number, calls: number, settled: Settled, disposed = 0): Execution {
    const { resultText, ...rest } = settled;
    const execution: Execution = { executionId: id, ...rest };
    if (execution.state !== "running") {
      this.#store?.finish(id, execution.state, {
        ...(resultText === undefined ? {} : { resultText }),
        ...(execution.error === undefined ? {} : { error: { $error: execution.error } }),
        calls,
        now: Date.now(),
      });
    }
    this.#emit({
      type: "bridge:execution",
      executionId: id,
      state: execution.state,
      attempt,
      ...(typeof execution.error?.code === "string" ? { code: execution.error.code } : {}),
      disposed,
    });
    return execution;
  }
}

/**
 * Creates an executor: checks the modules (specifiers, export names) and limits, and creates the
 * `dk_bridge_*` tables when `sql` is given.
 * @throws BridgeError `bridge/invalid-module`, `bridge/invalid-options`.
 */
export function createExecutor(options: ExecutorOptions): Executor {
  return new Executor(options);
}
