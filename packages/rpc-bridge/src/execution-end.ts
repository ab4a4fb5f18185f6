import { toErrorRecord } from "@durablekit/handle-journal";
import { dataSize, encodeChecked } from "./data-size";
import { type BridgeErrorCode, bridgeErrorRecord } from "./errors";
import type { Execution, ExecutionError } from "./execution";
import type { AttemptOutcome } from "./run";

/** How an execution ends, with the codec text of its result when it is recorded. */
export type Settled = Omit<Execution, "executionId"> & { resultText?: string };

/** The error body of a new `BridgeError`, as an execution's `error`. */
export function errorBody(code: BridgeErrorCode, message: string): ExecutionError {
  return bridgeErrorRecord(code, message).$error as ExecutionError;
}

/** The body of any thrown value's error record, as an execution's `error`. */
export function thrownBody(error: unknown): ExecutionError {
  return toErrorRecord(error).$error as ExecutionError;
}

/**
 * Checks a program's input or result against its byte limit: with `record`, answers its codec
 * text (what the store keeps); without, only measures it.
 * @throws BridgeError `limitCode` over the limit; `bridge/unserializable` for what the codec cannot carry.
 */
export function checkData(
  value: unknown,
  maxBytes: number,
  path: "input" | "result",
  limitCode: BridgeErrorCode,
  limitName: string,
  record: boolean,
): string | undefined {
  if (record) return encodeChecked(value, maxBytes, path, limitCode, limitName);
  dataSize(value, maxBytes, path, limitCode, limitName);
  return undefined;
}

/**
 * Why an interrupted `"restart"` run may not run again, or undefined when it may: a call marked
 * unsafeToRepeat ran (`unsafeCall`), or `attempt` was the last of `maxAttempts`. `reason` is the
 * interruption's, when known.
 */
export function restartRefusal(
  unsafeCall: string | null | undefined,
  attempt: number,
  maxAttempts: number,
  reason?: string,
): ExecutionError | undefined {
  if (unsafeCall !== null && unsafeCall !== undefined) {
    return errorBody(
      "bridge/unsafe-to-repeat",
      `The run was interrupted${reason === undefined ? "" : ` (${reason})`} after ${unsafeCall} ran, which is marked unsafeToRepeat, so it is not restarted.`,
    );
  }
  if (attempt >= maxAttempts) {
    return errorBody(
      "bridge/too-many-attempts",
      `The run was interrupted on each of its ${maxAttempts} attempts (maxAttempts)${reason === undefined ? "" : `; last: ${reason}`}.`,
    );
  }
  return undefined;
}

/**
 * How an execution ends after an attempt that was not restarted: completed with its result (over
 * `maxResultBytes`, or not data, it fails with `bridge/limit-result-bytes`), failed, failed as
 * interrupted, or cancelled. With `record`, a result carries its codec text for the store.
 */
export function settleOutcome(
  outcome: AttemptOutcome,
  maxResultBytes: number,
  record: boolean,
): Settled {
  switch (outcome.kind) {
    case "completed": {
      const code = "bridge/limit-result-bytes";
      try {
        const resultText = checkData(
          outcome.value,
          maxResultBytes,
          "result",
          code,
          "maxResultBytes",
          record,
        );
        return {
          state: "completed",
          result: outcome.value,
          ...(resultText === undefined ? {} : { resultText }),
        };
      } catch (error) {
        const body = thrownBody(error);
        if (body.code === "bridge/unserializable") {
          body.code = code;
          body.message = `The program's result is not data: ${body.message}`;
        }
        return { state: "failed", error: body };
      }
    }
    case "failed":
      return { state: "failed", error: outcome.error.$error as ExecutionError };
    case "interrupted":
      return {
        state: "failed",
        error: errorBody("bridge/interrupted", `The run was interrupted: ${outcome.reason}.`),
      };
    case "cancelled":
      return {
        state: "cancelled",
        error: errorBody("bridge/cancelled", `The run was cancelled: ${outcome.reason}.`),
      };
  }
}
