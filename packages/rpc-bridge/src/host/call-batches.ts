import { BridgeError, safeErrorRecord } from "../errors";
import type { Run } from "../run/run";
import { type Answer, type BatchReply, failure, MAX_BATCH_CALLS } from "../shared/wire";

/**
 * Microtask turns the host waits, after starting a batch's calls, for those that settle without
 * I/O (a host function that returns, its answer shaped and journaled) before it answers the batch.
 * A call still running after them is answered by ticket.
 */
const SETTLE_TURNS = 64;

function malformed(what: string): BridgeError {
  return new BridgeError("bridge/invalid-argument", `Malformed ${what} (wire mismatch).`);
}

/**
 * The host's side of call batches (wire `invokeBatch` and `answer`, see `BatchedCall`): it starts
 * a batch's calls in order through the run's one pipeline, each exactly as a separate `invoke`
 * would (same keys, checks, limits and journal rows), waits a few microtask turns, then answers
 * with the answers of the calls that settled and a ticket for each one still running, which the
 * isolate redeems once with `answer(ticket)`. A batch is checked before any call in it starts:
 * an array of at most {@link MAX_BATCH_CALLS} calls, else it is refused whole and nothing runs.
 */
export class CallBatches {
  readonly #run: Run;
  /** Answers of calls answered by ticket, until redeemed. */
  readonly #tickets = new Map<number, Promise<Answer>>();
  #nextTicket = 1;

  constructor(run: Run) {
    this.#run = run;
  }

  /**
   * Starts every call of `calls` (each `invoke`'s arguments as a tuple) in order and answers them.
   * @throws BridgeError `bridge/invalid-argument` when `calls` is not an array of 1 to
   *   {@link MAX_BATCH_CALLS} entries (no call ran).
   */
  invoke(calls: unknown): BatchReply | Promise<BatchReply> {
    if (!Array.isArray(calls) || calls.length === 0 || calls.length > MAX_BATCH_CALLS) {
      throw malformed(`batch: an array of 1 to ${MAX_BATCH_CALLS} calls is expected`);
    }
    const count = calls.length;
    const answers: Answer[] = new Array(count);
    const tickets: number[] = new Array(count).fill(0);
    let running = 0;
    const started: Array<Promise<Answer> | undefined> = new Array(count);
    for (let i = 0; i < count; i++) {
      const call: unknown = calls[i];
      const parts = Array.isArray(call) ? call : [];
      let answer: Answer | Promise<Answer>;
      try {
        answer = this.#run.invoke(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]);
      } catch (error) {
        answer = failure(safeErrorRecord(error));
      }
      if (!(answer instanceof Promise)) {
        answers[i] = answer;
        continue;
      }
      running++;
      started[i] = answer.then(
        (settled) => {
          answers[i] = settled;
          started[i] = undefined;
          running--;
          return settled;
        },
        (error: unknown) => {
          const settled = failure(safeErrorRecord(error));
          answers[i] = settled;
          started[i] = undefined;
          running--;
          return settled;
        },
      );
    }
    if (running === 0) return { answers, tickets };
    return this.#answerSettled(answers, tickets, started, () => running);
  }

  async #answerSettled(
    answers: Answer[],
    tickets: number[],
    started: Array<Promise<Answer> | undefined>,
    running: () => number,
  ): Promise<BatchReply> {
    for (let turn = 0; turn < SETTLE_TURNS && running() > 0; turn++) await undefined;
    for (let i = 0; i < started.length; i++) {
      const pending = started[i];
      if (pending === undefined) continue;
      const ticket = this.#nextTicket++;
      this.#tickets.set(ticket, pending);
      tickets[i] = ticket;
      answers[i] = null as unknown as Answer;
    }
    return { answers, tickets };
  }

  /** The answer of the call answered by `ticket`, once; a ticket not held is answered with an error. */
  answer(ticket: unknown): Answer | Promise<Answer> {
    const pending = typeof ticket === "number" ? this.#tickets.get(ticket) : undefined;
    if (pending === undefined) {
      return failure(safeErrorRecord(malformed("ticket: it names no call answered by ticket")));
    }
    this.#tickets.delete(ticket as number);
    return pending;
  }
}
