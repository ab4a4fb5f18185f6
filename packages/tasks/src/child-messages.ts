import { TasksError } from "./errors";

/**
 * The version of the messages objects exchange about child runs (`tasks.receive(message)`), part
 * of every message as `v`. A receiver refuses a version it does not know, so an object is never
 * misled by a newer peer; the sender keeps the message in its outbox until a deploy can read it.
 */
export const CHILD_MESSAGE_VERSION = 1;

/** Where a Durable Object is reached: the binding of its namespace and its id (hex). */
export interface ObjectAddress {
  binding: string;
  id: string;
}

/** The parent sends it to start a child run, once per `startChild` step (retries join the same run). */
export interface StartMessage {
  v: 1;
  kind: "start";
  /** The child's idempotency key: `<parent run id>:<step>`. */
  key: string;
  definition: string;
  /** The input, as the tasks value codec encodes it. */
  input: string;
  parent: ObjectAddress;
  parentRunId: string;
}

/** The child sends it when it settles: delivered until the parent acknowledges it. */
export interface SettledMessage {
  v: 1;
  kind: "settled";
  key: string;
  parentRunId: string;
  childRunId: string;
  state: "completed" | "failed" | "cancelled";
  /** The result (completed), as the codec encodes it; null otherwise. */
  result: string | null;
  /** The error record text (failed, cancelled); null otherwise. */
  error: string | null;
}

/** The parent sends it when it settles with the child still running. */
export interface CancelMessage {
  v: 1;
  kind: "cancel";
  key: string;
  childRunId: string;
  reason: string;
}

/** Every message of the child-run protocol. */
export type ChildMessage = StartMessage | SettledMessage | CancelMessage;

/** What `tasks.receive()` answers. */
export type TaskChildReply =
  /**
   * The message was applied, or had been: a duplicate is acknowledged too. `runId` answers a
   * start; `applied` says whether a settlement changed anything (false for a duplicate).
   */
  | { v: 1; ok: true; runId?: string; applied?: boolean }
  /** The run the message is for is gone (deleted, or settled for a notification): drop it. */
  | { v: 1; ok: true; gone: true }
  /** The message was refused; retrying it will not help unless the deploy changes. */
  | { v: 1; ok: false; code: string; message: string };

/** Most characters of an id, key, definition or binding name a message may carry. */
const MAX_NAME = 1024;
/** Most characters of an encoded value a message may carry (the codec's own bound is checked again on use). */
const MAX_TEXT = 64 * 1024 * 1024;

function invalid(what: string): TasksError {
  return new TasksError(
    "tasks/invalid-argument",
    `tasks.receive() got a malformed child-run message: ${what}. Pass it the message another object's Tasks sent, unchanged.`,
  );
}

function name(value: unknown, what: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_NAME) {
    throw invalid(`${what} must be a non-empty string of at most ${MAX_NAME} characters`);
  }
  return value;
}

function text(value: unknown, what: string, nullable: boolean): string | null {
  if (value === null && nullable) return null;
  if (typeof value !== "string" || value.length > MAX_TEXT) {
    throw invalid(`${what} must be encoded text${nullable ? " or null" : ""}`);
  }
  return value;
}

function address(value: unknown): ObjectAddress {
  if (typeof value !== "object" || value === null) throw invalid("parent must be an address");
  const { binding, id } = value as Partial<ObjectAddress>;
  return { binding: name(binding, "parent.binding"), id: name(id, "parent.id") };
}

/**
 * Checks a message received from another object (it crossed Workers RPC: trust its shape to
 * nothing) and answers it typed.
 * @throws TasksError `tasks/invalid-argument` for anything malformed; `tasks/schema-too-new` for a
 *   version this package does not know.
 */
export function readChildMessage(message: unknown): ChildMessage {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    throw invalid("not an object");
  }
  const m = message as Record<string, unknown>;
  if (m.v !== CHILD_MESSAGE_VERSION) {
    throw new TasksError(
      "tasks/schema-too-new",
      `tasks.receive() got a child-run message of version ${String(m.v)}; this @durablekit/tasks reads version ${CHILD_MESSAGE_VERSION}. Deploy the same package version to both objects.`,
    );
  }
  const key = name(m.key, "key");
  switch (m.kind) {
    case "start":
      return {
        v: 1,
        kind: "start",
        key,
        definition: name(m.definition, "definition"),
        input: text(m.input, "input", false) as string,
        parent: address(m.parent),
        parentRunId: name(m.parentRunId, "parentRunId"),
      };
    case "settled": {
      const state = m.state;
      if (state !== "completed" && state !== "failed" && state !== "cancelled") {
        throw invalid("state must be completed, failed or cancelled");
      }
      return {
        v: 1,
        kind: "settled",
        key,
        parentRunId: name(m.parentRunId, "parentRunId"),
        childRunId: name(m.childRunId, "childRunId"),
        state,
        result: text(m.result, "result", true),
        error: text(m.error, "error", true),
      };
    }
    case "cancel":
      return {
        v: 1,
        kind: "cancel",
        key,
        childRunId: name(m.childRunId, "childRunId"),
        reason: typeof m.reason === "string" ? m.reason.slice(0, MAX_NAME) : "parent settled",
      };
    default:
      throw invalid("kind must be start, settled or cancel");
  }
}
