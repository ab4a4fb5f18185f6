import type { JournalErrorRecord } from "@durablekit/handle-journal";
import type { ReplayOptions } from "../shared/wire";
import { DeliveryOrder, type RealTimers } from "./delivery-order";
import { SeededRandom } from "./seeded-random";
import { VirtualClock } from "./virtual-clock";
import { VirtualTimers } from "./virtual-timers";
import { WebCryptoGuard } from "./webcrypto-guard";

/**
 * Everything that makes one attempt of a replay run repeat the recorded ones: the virtual clock,
 * the seeded randomness, the virtual timers, the delivery order and the Web Crypto guard, built
 * from the run's {@link ReplayOptions} and installed on the isolate's globals before the program
 * is imported. A run that is not a replay run never builds one (it keeps the real globals).
 */
export class DeterministicIsolate {
  readonly clock: VirtualClock;
  readonly random: SeededRandom;
  readonly order: DeliveryOrder;
  readonly timers: VirtualTimers;
  readonly crypto = new WebCryptoGuard();

  /**
   * @param real the platform's timer functions, captured before any global was replaced.
   * @param onTimerError receives what a timer callback throws.
   * @throws TypeError when the seed is not 64 hexadecimal characters.
   */
  constructor(replay: ReplayOptions, real: RealTimers, onTimerError: (error: unknown) => void) {
    this.random = new SeededRandom(replay.seed);
    this.clock = new VirtualClock(replay.startedAt);
    this.order = new DeliveryOrder(replay.schedule, this.clock, real);
    this.timers = new VirtualTimers(this.clock, this.order, real, onTimerError);
  }

  /** Replaces the isolate's clock, randomness, timers and key-generating Web Crypto methods. */
  install(global: typeof globalThis): void {
    this.clock.install(global);
    this.random.install(global);
    this.timers.install(global);
    this.crypto.install(global);
  }

  /** Settles with the record of the divergence when the program stops repeating its recorded order. */
  get diverged(): Promise<JournalErrorRecord> {
    return this.order.diverged;
  }

  /** The program returned: the divergence when recorded events were left undelivered, else null. */
  finish(): JournalErrorRecord | null {
    return this.order.finish();
  }
}
