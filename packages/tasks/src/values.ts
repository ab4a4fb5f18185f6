import {
  CodecError,
  decode,
  encode,
  fromErrorRecord,
  type JournalErrorRecord,
  toErrorRecord,
} from "@durablekit/handle-journal";
import { TasksError, type TasksErrorCode } from "./errors";
import type { TaskErrorInfo } from "./events";

/** Default limit of one encoded value: 1 MiB. */
export const DEFAULT_MAX_VALUE_BYTES = 1_048_576;

/** The code a codec refusal becomes: the same word as the codec's, under `tasks/`. */
function codeOf(error: CodecError): TasksErrorCode {
  if (error.code === "journal/too-large") return "tasks/too-large";
  if (error.code === "journal/too-deep") return "tasks/too-deep";
  return "tasks/unserializable";
}

/**
 * Encodes a value with the handle-journal codec.
 *
 * @param path - root label of error paths, e.g. `input` or `step "fetch" result`.
 * @throws TasksError `tasks/too-large` (over `maxBytes`), `tasks/too-deep` or `tasks/unserializable`
 *   naming the offending path, with the codec error as cause.
 */
export function encodeValue(value: unknown, maxBytes: number, path: string): string {
  try {
    return encode(value, { maxValueBytes: maxBytes, path });
  } catch (error) {
    if (error instanceof CodecError) {
      throw new TasksError(
        codeOf(error),
        `Cannot store ${path}: ${error.message} Task values must be JSON or superjson types (Date, Map, Set, BigInt, …) and at most ${maxBytes} bytes encoded.`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Decodes a value written by {@link encodeValue}. */
export function decodeValue(text: string | null): unknown {
  return text === null ? undefined : decode(text);
}

/** The JSON text of a thrown value's error record. */
export function errorText(thrown: unknown): string {
  return JSON.stringify(toErrorRecord(thrown));
}

/** Rebuilds the error of an error record's text: the same name, message, code and properties. */
export function rebuildError(text: string | null): Error {
  if (text === null) return new Error("Step failed");
  return fromErrorRecord(JSON.parse(text) as JournalErrorRecord);
}

/** Name, message and code of an error record's text. */
export function errorInfo(text: string | null): TaskErrorInfo {
  if (text === null) return { name: "Error", message: "Task run failed" };
  const { $error } = JSON.parse(text) as JournalErrorRecord;
  const info: TaskErrorInfo = { name: $error.name, message: $error.message };
  if (typeof $error.code === "string") info.code = $error.code;
  return info;
}
