/**
 * Events `inspectorResponse` emits through its `onEvent` option, for logs, metrics and tests: what
 * a live view costs the object while a page watches it, and why it stopped.
 */
export type InspectEvent =
  /** A live view was read (every `liveIntervalMs`); `changed` when its JSON was new and sent. */
  | { type: "inspect:live:read"; view: string; changed: boolean }
  /**
   * A live view stopped reading: `final` (what it shows can no longer change: it sent `event: end`
   * with that reason), `max-live` (after `maxLiveMs`; the page reconnects) or `disconnected` (the
   * client went away). `reads` counts the reads it made.
   */
  | {
      type: "inspect:live:ended";
      view: string;
      reason: "final" | "max-live" | "disconnected";
      reads: number;
    };
