import {
  fromErrorRecord,
  type JournalErrorRecord,
  toErrorRecord,
} from "@durablekit/handle-journal";
import { type BridgeErrorCode, bridgeErrorRecord } from "../errors";
import type { AttemptOutcome } from "../run/attempt-outcome";
import type { BridgeExecutionError } from "./execution";

/** The error body of a new `BridgeError`, as an execution's `error`. */
export function errorBody(code: BridgeErrorCode, message: string): BridgeExecutionError {
  return bridgeErrorRecord(code, message).$error as BridgeExecutionError;
}

/** The body of any thrown value's error record, as an execution's `error`. */
export function thrownBody(error: unknown): BridgeExecutionError {
  return toErrorRecord(error).$error as BridgeExecutionError;
}

/** Why a replay run whose fingerprint changed (`changed` says what) is not replayed. */
export function fingerprintError(changed: string): BridgeExecutionError {
  return errorBody(
    "bridge/fingerprint-changed",
    `The replay run cannot go on: since it was recorded, ${changed} changed, so replaying its journal could answer another program. Start a new execution (host-module code may change between attempts; the program, source modules, compatibility settings and formats may not).`,
  );
}

/** An attempt whose isolate failed (`what` says at which point), as its outcome. */
export function isolateFailed(what: string, error: unknown): AttemptOutcome {
  const why = error instanceof Error ? error.message : String(error);
  return { kind: "failed", error: bridgeErrorRecord("bridge/isolate-failed", `${what}: ${why}`) };
}

/**
 * Normalizes a record from the isolate (untrusted) through handle-journal's own round trip. A
 * `bridge/…` code in it was thrown by the program, not by the bridge: it moves to `programCode`, so
 * an execution's `code` starting with `bridge/` is always the bridge's own.
 */
export function normalize(record: JournalErrorRecord): JournalErrorRecord {
  let normalized: JournalErrorRecord;
  try {
    normalized = toErrorRecord(fromErrorRecord(record));
  } catch {
    return toErrorRecord(new Error("The program failed with an unreadable error."));
  }
  const { code, ...rest } = normalized.$error;
  if (typeof code === "string" && code.startsWith("bridge/")) {
    return { $error: { ...rest, programCode: code } };
  }
  return normalized;
}
