import { isWellFormedName } from "@durablekit/compose";
import { TasksError } from "../errors";

/**
 * The version of the messages objects exchange about child runs (`tasks.receive(message)`), part
 * of every message as `v`. A receiver refuses a version it does not know, so an object is never
 * misled by a newer peer; the sender keeps the message in its outbox until a deploy can read it.
 * Version 2 added the exchange's key and secret to every message (DESIGN.md, "Child runs").
 */
export const CHILD_MESSAGE_VERSION = 2;

/** Where a Durable Object is reached: the binding of its namespace and its id (hex). */
export interface ObjectAddress {
  binding: string;
  id: string;
}

/**
 * What names one start of one child run and proves a message belongs to it: `key` (public, unique
 * across objects and over time: 128 random bits made when the parent recorded its intent) and
 * `secret` (128 random bits only the two objects hold, echoed by every later message).
 */
export interface Exchange {
  key: string;
  secret: string;
}

/** The parent sends it to start a child run, once per `startChild` step (retries join the same run). */
export interface StartMessage extends Exchange {
  v: 2;
  kind: "start";
  parent: ObjectAddress;
  parentRunId: string;
  /** The parent's step that starts it, and its position among the children that step starts. */
  step: string;
  index: number;
  definition: string;
  /** The input, as the tasks value codec encodes it. */
  input: string;
}

/** The child sends it when it settles: delivered until the parent acknowledges it. */
export interface SettledMessage extends Exchange {
  v: 2;
  kind: "settled";
  parentRunId: string;
  step: string;
  index: number;
  childRunId: string;
  state: "completed" | "failed" | "cancelled";
  /** The result (completed), as the codec encodes it; null otherwise. */
  result: string | null;
  /** The error record text (failed, cancelled); null otherwise. */
  error: string | null;
}

/** The parent sends it when it settles with the child still running (or still being started). */
export interface CancelMessage extends Exchange {
  v: 2;
  kind: "cancel";
  reason: string;
}

/** One message of the child-run protocol. */
export type ChildMessage = StartMessage | SettledMessage | CancelMessage;

/** Messages one object owes another, sent and applied together (one RPC, one commit for settlements). */
export interface BatchMessage {
  v: 2;
  kind: "batch";
  messages: ChildMessage[];
}

/** What `tasks.receive()` answers one message. */
export type TaskChildMessageReply =
  /**
   * The message was applied, or had been: a duplicate is acknowledged too. `runId` answers a
   * start; `applied` says whether a settlement changed anything (false for a duplicate). A
   * start's reply carries `settled`, the child's settlement message, when the child settled
   * before the answer left (it ran without I/O): the same message its delivery carries later,
   * read by the parent as untrusted input like any other.
   */
  | { v: 2; ok: true; runId?: string; applied?: boolean; settled?: unknown }
  /**
   * Nothing here needs it any more: the exchange it names is gone (its run deleted or settled, or
   * a start cancelled before it arrived). The sender drops it.
   */
  | { v: 2; ok: true; gone: true }
  /** The message was refused and changed nothing. */
  | { v: 2; ok: false; code: string; message: string };

/** What `tasks.receive()` answers: one reply per message, in order, for a batch. */
export type TaskChildReply =
  | TaskChildMessageReply
  | { v: 2; ok: true; replies: TaskChildMessageReply[] };

/** Most messages one batch carries. */
export const MAX_BATCH_MESSAGES = 256;
/** Most characters of a binding name, a reason or a definition a message may carry. */
const MAX_NAME = 256;
/** Most characters of an encoded value a message may carry (the codec's own bound is checked again on use). */
const MAX_TEXT = 8 * 1024 * 1024;
/** A key or secret: 128 random bits as 32 lowercase hex digits. */
const TOKEN = /^[0-9a-f]{32}$/;
/** Most children one step starts (`startChildren`); an index is below it. */
export const MAX_STARTED_CHILDREN = 1_000;
/** A Durable Object id: 64 lowercase hex digits. */
const OBJECT_ID = /^[0-9a-f]{64}$/;

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** A new exchange: a fresh key and secret, recorded by the parent before its start leaves. */
export function newExchange(): Exchange {
  return { key: randomToken(), secret: randomToken() };
}

/**
 * True when `given` is the secret `held` (compared in time that does not depend on where they
 * differ, so a caller learns nothing of the secret from how long a refusal takes).
 */
export function provesSecret(held: string, given: string): boolean {
  if (held.length !== given.length) return false;
  let diff = 0;
  for (let i = 0; i < held.length; i++) diff |= held.charCodeAt(i) ^ given.charCodeAt(i);
  return diff === 0;
}

function invalid(what: string): TasksError {
  return new TasksError(
    "tasks/invalid-argument",
    `tasks.receive() got a malformed child-run message: ${what}. Pass it the message another object's Tasks sent, unchanged.`,
  );
}

function name(value: unknown, what: string): string {
  if (!isWellFormedName(value, MAX_NAME)) {
    throw invalid(`${what} must be a non-empty string of at most ${MAX_NAME} characters`);
  }
  return value;
}

function token(value: unknown, what: string): string {
  if (typeof value !== "string" || !TOKEN.test(value)) {
    throw invalid(`${what} must be 32 lowercase hex digits`);
  }
  return value;
}

function index(value: unknown): number {
  if (
    typeof value !== "number" ||
    !Number.isInteger(value) ||
    value < 0 ||
    value >= MAX_STARTED_CHILDREN
  ) {
    throw invalid(`index must be an integer from 0 to ${MAX_STARTED_CHILDREN - 1}`);
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
  if (typeof id !== "string" || !OBJECT_ID.test(id)) {
    throw invalid("parent.id must be a Durable Object id (64 hex digits)");
  }
  return { binding: name(binding, "parent.binding"), id };
}

function record(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(`${what} is not an object`);
  }
  return value as Record<string, unknown>;
}

function checkVersion(m: Record<string, unknown>): void {
  if (m.v === CHILD_MESSAGE_VERSION) return;
  if (typeof m.v !== "number" || !Number.isInteger(m.v) || m.v < 1) {
    throw invalid(
      `it carries no version (v is ${String(m.v)}; a message has v: ${CHILD_MESSAGE_VERSION})`,
    );
  }
  if (m.v > CHILD_MESSAGE_VERSION) {
    throw new TasksError(
      "tasks/schema-too-new",
      `tasks.receive() got a child-run message of version ${m.v}; this @durablekit/tasks reads version ${CHILD_MESSAGE_VERSION}. Deploy the newer package version to this object too; the sender retries until then.`,
    );
  }
  throw new TasksError(
    "tasks/invalid-argument",
    `tasks.receive() got a child-run message of version ${m.v}, which this @durablekit/tasks no longer reads (it reads version ${CHILD_MESSAGE_VERSION}: every message proves its exchange). Deploy the same package version to both objects.`,
  );
}

/** Reads one message (not a batch) whose version was checked. */
function readOne(m: Record<string, unknown>): ChildMessage {
  const exchange = { key: token(m.key, "key"), secret: token(m.secret, "secret") };
  switch (m.kind) {
    case "start":
      return {
        v: 2,
        kind: "start",
        ...exchange,
        parent: address(m.parent),
        parentRunId: name(m.parentRunId, "parentRunId"),
        step: name(m.step, "step"),
        index: index(m.index),
        definition: name(m.definition, "definition"),
        input: text(m.input, "input", false) as string,
      };
    case "settled": {
      const state = m.state;
      if (state !== "completed" && state !== "failed" && state !== "cancelled") {
        throw invalid("state must be completed, failed or cancelled");
      }
      const result = text(m.result, "result", true);
      const error = text(m.error, "error", true);
      if (state === "completed" ? error !== null : result !== null) {
        throw invalid("a completed settlement carries no error, any other no result");
      }
      return {
        v: 2,
        kind: "settled",
        ...exchange,
        parentRunId: name(m.parentRunId, "parentRunId"),
        step: name(m.step, "step"),
        index: index(m.index),
        childRunId: name(m.childRunId, "childRunId"),
        state,
        result,
        error,
      };
    }
    case "cancel":
      return {
        v: 2,
        kind: "cancel",
        ...exchange,
        reason: typeof m.reason === "string" ? m.reason.slice(0, MAX_NAME) : "parent settled",
      };
    default:
      throw invalid("kind must be start, settled, cancel or batch");
  }
}

/**
 * Checks what another object sent (it crossed Workers RPC: trust its shape to nothing) and answers
 * it typed: one message, or a batch of 1 to {@link MAX_BATCH_MESSAGES}.
 * @throws TasksError `tasks/invalid-argument` for anything malformed (a missing or retired version
 *   included); `tasks/schema-too-new` for a version newer than this package reads.
 */
export function readChildMessage(message: unknown): ChildMessage | BatchMessage {
  const m = record(message, "it");
  checkVersion(m);
  if (m.kind !== "batch") return readOne(m);
  const list = m.messages;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_BATCH_MESSAGES) {
    throw invalid(`a batch carries 1 to ${MAX_BATCH_MESSAGES} messages`);
  }
  const messages: ChildMessage[] = [];
  for (let i = 0; i < list.length; i++) {
    const item = record(list[i], `message ${i} of the batch`);
    checkVersion(item);
    messages.push(readOne(item));
  }
  return { v: 2, kind: "batch", messages };
}

/** A batch of messages owed to one object. */
export function batchMessage(messages: ChildMessage[]): BatchMessage {
  return { v: 2, kind: "batch", messages };
}

/** The reply of an applied message. */
export function acknowledged(
  fields: { runId?: string; applied?: boolean } = {},
): TaskChildMessageReply {
  return { v: 2, ok: true, ...fields };
}

/** The reply to a message whose exchange is gone here: the sender drops it. */
export const GONE: TaskChildMessageReply = { v: 2, ok: true, gone: true };

/** The reply of a refused message (it changed nothing). */
export function refusal(code: string, message: string): TaskChildMessageReply {
  return { v: 2, ok: false, code, message };
}

/**
 * A message as the outbox stores it: the envelope, and its one large field (a settlement's result
 * or error text) apart, so the text is stored as it is and not escaped a second time inside the
 * envelope's JSON (a result of `maxValueBytes` fits one row under the platform's 2 MB row limit).
 */
export interface StoredMessage {
  envelope: string;
  payload: string | null;
}

/** The outbox's form of a message (see {@link StoredMessage}). */
export function toStored(message: ChildMessage): StoredMessage {
  if (message.kind !== "settled") return { envelope: JSON.stringify(message), payload: null };
  const { result, error, ...envelope } = message;
  return { envelope: JSON.stringify(envelope), payload: result ?? error };
}

/** The outbox id of exchange `key`'s settlement: one per exchange, so it is queued at most once. */
export function settledId(key: string): string {
  return `settled:${key}`;
}

/** The message the outbox stored (see {@link toStored}). */
export function fromStored(stored: StoredMessage): ChildMessage {
  const message = JSON.parse(stored.envelope) as ChildMessage;
  if (message.kind !== "settled") return message;
  const completed = message.state === "completed";
  return {
    ...message,
    result: completed ? stored.payload : null,
    error: completed ? null : stored.payload,
  };
}

/** The start of the exchange a parent recorded (its intent). */
export function startMessage(
  exchange: Exchange,
  parent: ObjectAddress,
  parentRunId: string,
  step: string,
  index: number,
  definition: string,
  input: string,
): StartMessage {
  return {
    v: 2,
    kind: "start",
    key: exchange.key,
    secret: exchange.secret,
    parent,
    parentRunId,
    step,
    index,
    definition,
    input,
  };
}

/** A child's settlement, for the parent its link names. */
export function settledMessage(
  exchange: Exchange,
  parentRunId: string,
  step: string,
  index: number,
  childRunId: string,
  state: SettledMessage["state"],
  result: string | null,
  error: string | null,
): SettledMessage {
  const completed = state === "completed";
  return {
    v: 2,
    kind: "settled",
    key: exchange.key,
    secret: exchange.secret,
    parentRunId,
    step,
    index,
    childRunId,
    state,
    result: completed ? result : null,
    error: completed ? null : error,
  };
}

/** A parent's cancel of the child of an exchange. */
export function cancelMessage(exchange: Exchange, reason: string): CancelMessage {
  return { v: 2, kind: "cancel", key: exchange.key, secret: exchange.secret, reason };
}
