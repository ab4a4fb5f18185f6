import { RpcTarget } from "cloudflare:workers";
import type { Run } from "../run/run";
import type { Answer, BatchReply } from "../shared/wire";
import { CallBatches } from "./call-batches";

/**
 * The RpcTarget the isolate holds: exactly six methods, and no state but private fields. Workers
 * RPC exposes every method of an RpcTarget's class, so everything else lives in the private run.
 */
export class BridgeEndpoint extends RpcTarget {
  readonly #run: Run;
  readonly #batches: CallBatches;

  constructor(run: Run) {
    super();
    this.#run = run;
    this.#batches = new CallBatches(run);
  }

  /**
   * Calls function or method `method` of handle `handleId` (`""` calls a function handle) with
   * `args`, whose wire `ArgsKind` is `kind` (checked by the run). `events` is the isolate's event
   * window of a replay run (wire v4), absent otherwise; `answered` reports the calls the isolate of a
   * replay run answered itself since its previous `invoke` (wire v5).
   */
  invoke(
    handleId: unknown,
    method: unknown,
    args: unknown,
    kind: unknown,
    events?: unknown,
    answered?: unknown,
  ): Answer | Promise<Answer> {
    return this.#run.invoke(handleId, method, args, kind, events, answered);
  }

  /**
   * Calls each of `calls` (`invoke`'s arguments as tuples, in call order) as `invoke` would, and
   * answers them together; a call still waiting for I/O is answered by a ticket (see `BatchReply`).
   */
  invokeBatch(calls: unknown): BatchReply | Promise<BatchReply> {
    return this.#batches.invoke(calls);
  }

  /** The answer of a call a batch answered by `ticket` (once). */
  answer(ticket: unknown): Answer | Promise<Answer> {
    return this.#batches.answer(ticket);
  }

  /** Releases a handle the program disposed. */
  dispose(handleId: unknown): void {
    this.#run.release(handleId);
  }

  /** How a host stream the program read to its end ended: its error record, or null. */
  streamEnd(streamId: unknown): unknown {
    return this.#run.streamEnd(streamId);
  }

  /** Mirrors the abort of a signal the program passed as an argument. */
  abort(signalId: unknown, reason: unknown): void {
    this.#run.abortSignal(signalId, reason);
  }
}
