import type { JournalErrorRecord } from "@durablekit/handle-journal";
import {
  ArrayIsArray,
  ArrayPrototypePush,
  SafeError,
  SafePromise,
  thenOf,
} from "../shared/primordials";
import {
  type Answer,
  type AnsweredCalls,
  type ArgsKind,
  type BatchedCall,
  type BatchReply,
  type EventWindow,
  MAX_BATCH_CALLS,
  MAX_BATCH_WEIGHT,
} from "../shared/wire";

/** The host's endpoint, as the isolate sees it (a Workers RPC stub of `BridgeEndpoint`). */
export interface BridgeStub {
  invoke(
    handleId: number,
    method: string,
    args: unknown[],
    kind: ArgsKind,
    events?: EventWindow,
    answered?: AnsweredCalls,
  ): Promise<Answer>;
  invokeBatch(calls: BatchedCall[]): Promise<BatchReply>;
  answer(ticket: number): Promise<Answer>;
  dispose(handleId: number): Promise<void>;
  abort(signalId: number, reason: JournalErrorRecord): Promise<void>;
  streamEnd(streamId: number): Promise<JournalErrorRecord | null>;
}

/** A call waiting for its batch to be sent. */
interface Queued {
  call: BatchedCall;
  resolve(answer: Answer | Promise<Answer>): void;
  reject(error: unknown): void;
}

/** Settled once the module loads: its `then` runs a callback after the microtasks queued before it. */
const RESOLVED: Promise<void> = new SafePromise<void>((resolve) => resolve());

/**
 * The isolate's one way to the host. Calls whose arguments are primitives wait until the program's
 * synchronous stretch ends (one microtask) and go together in one `invokeBatch` (one alone as a
 * plain `invoke`); every other message (a call with objects, a dispose, an abort, a stream's end)
 * first sends the batch waiting before it, so the host receives everything in program order.
 *
 * Why: the host journals each answered call, and a Durable Object commits the writes of one event
 * together; 25 calls of a `Promise.all` sent as 25 invokes are 25 events and 25 commits in a row,
 * sent as one batch they are one event and, when they settle without I/O, one commit.
 */
export class CallBatcher {
  readonly #stub: BridgeStub;
  #queue: Queued[] = [];
  /** String characters the queued calls' arguments carry. */
  #weight = 0;
  #scheduled = false;
  /** Set in a replay run: answers of one reply are resolved one per macrotask. */
  #nextTurn: ((callback: () => void) => void) | null = null;

  constructor(stub: BridgeStub) {
    this.#stub = stub;
  }

  /**
   * Queues a call whose arguments are primitives (no symbol) for the batch of this synchronous
   * stretch; resolves to its answer. Never throws: a failure to send rejects.
   */
  enqueue(call: BatchedCall, weight: number): Promise<Answer> {
    if (this.#queue.length >= MAX_BATCH_CALLS || this.#weight + weight > MAX_BATCH_WEIGHT) {
      this.flush();
    }
    return new SafePromise<Answer>((resolve, reject) => {
      ArrayPrototypePush(this.#queue, { call, resolve, reject });
      this.#weight += weight;
      if (this.#scheduled) return;
      this.#scheduled = true;
      thenOf(RESOLVED, this.#flushScheduled);
    });
  }

  readonly #flushScheduled = (): void => {
    this.#scheduled = false;
    this.flush();
  };

  /** Sends the calls queued so far, now. */
  flush(): void {
    const queue = this.#queue;
    if (queue.length === 0) return;
    this.#queue = [];
    this.#weight = 0;
    const stub = this.#stub;
    if (queue.length === 1) {
      const one = queue[0] as Queued;
      const c = one.call;
      try {
        // A call of a run that is not a replay run has four arguments, as it would unbatched.
        one.resolve(
          c.length === 4
            ? stub.invoke(c[0], c[1], c[2], c[3])
            : stub.invoke(c[0], c[1], c[2], c[3], c[4], c[5]),
        );
      } catch (error) {
        one.reject(error);
      }
      return;
    }
    const calls: BatchedCall[] = [];
    for (let i = 0; i < queue.length; i++) calls[i] = (queue[i] as Queued).call;
    const rejectAll = (error: unknown) => {
      for (let i = 0; i < queue.length; i++) (queue[i] as Queued).reject(error);
    };
    let reply: Promise<BatchReply>;
    try {
      reply = stub.invokeBatch(calls);
    } catch (error) {
      rejectAll(error);
      return;
    }
    thenOf(
      reply,
      (r: BatchReply) => {
        const answers = r?.answers;
        const tickets = r?.tickets;
        if (
          !ArrayIsArray(answers) ||
          !ArrayIsArray(tickets) ||
          answers.length !== queue.length ||
          tickets.length !== queue.length
        ) {
          rejectAll(new SafeError("The bridge sent a batch reply it could not read."));
          return;
        }
        const settled: number[] = [];
        for (let i = 0; i < queue.length; i++) {
          const one = queue[i] as Queued;
          const ticket = tickets[i];
          if (ticket === 0) {
            ArrayPrototypePush(settled, i);
            continue;
          }
          try {
            one.resolve(stub.answer(ticket as number));
          } catch (error) {
            one.reject(error);
          }
        }
        this.#resolveSettled(queue, answers, settled);
      },
      rejectAll,
    );
  }

  /**
   * Resolves the calls of one reply that came with their answers: all at once, or, in a replay
   * run, one per macrotask (see {@link answerPerTurn}).
   */
  #resolveSettled(queue: Queued[], answers: unknown[], settled: number[]): void {
    const nextTurn = this.#nextTurn;
    if (nextTurn === null) {
      for (let n = 0; n < settled.length; n++) {
        const i = settled[n] as number;
        (queue[i] as Queued).resolve(answers[i] as Answer);
      }
      return;
    }
    let n = 0;
    const resolveNext = (): void => {
      const i = settled[n++];
      if (i === undefined) return;
      (queue[i] as Queued).resolve(answers[i] as Answer);
      if (n < settled.length) nextTurn(resolveNext);
    };
    resolveNext();
  }

  /**
   * A replay run's delivery order hands the program one answer per macrotask and counts on each
   * answer arriving in a macrotask of its own, as separate Workers RPC answers do: from here on, the
   * answers that come together in one batch reply are resolved one per `nextTurn`.
   */
  answerPerTurn(nextTurn: (callback: () => void) => void): void {
    this.#nextTurn = nextTurn;
  }

  invoke(
    handleId: number,
    method: string,
    args: unknown[],
    kind: ArgsKind,
    events?: EventWindow,
    answered?: AnsweredCalls,
  ): Promise<Answer> {
    this.flush();
    return this.#stub.invoke(handleId, method, args, kind, events, answered);
  }

  dispose(handleId: number): Promise<void> {
    this.flush();
    return this.#stub.dispose(handleId);
  }

  abort(signalId: number, reason: JournalErrorRecord): Promise<void> {
    this.flush();
    return this.#stub.abort(signalId, reason);
  }

  streamEnd(streamId: number): Promise<JournalErrorRecord | null> {
    this.flush();
    return this.#stub.streamEnd(streamId);
  }
}
