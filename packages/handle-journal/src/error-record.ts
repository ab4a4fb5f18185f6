import { JournalError } from "./errors";
import { defineOwn } from "./own-property";

/** The durable form of a thrown value. */
export interface JournalErrorRecord {
  $error: { name: string; message: string; code?: string; [prop: string]: unknown };
}

type ErrorCtor = new (message?: string) => Error;

/** Built-in error classes rebuilt by name; anything else becomes an `Error` carrying the name. */
const BUILT_IN: Readonly<Record<string, ErrorCtor>> = {
  Error,
  TypeError,
  RangeError,
  SyntaxError,
  ReferenceError,
  EvalError,
  URIError,
};

/** Props with a fixed meaning in a record; every other own enumerable prop is carried as is. */
const RESERVED = new Set(["name", "message", "stack", "cause", "errors"]);

/** Props nest at most this deep in a record; deeper parts are dropped like other non-JSON values. */
const MAX_PROP_DEPTH = 32;
const DROP: unique symbol = Symbol("drop");

function isError(value: unknown): value is Error {
  return value instanceof Error || Object.prototype.toString.call(value) === "[object Error]";
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * A prop value as plain JSON: finite numbers (`-0` as `0`), strings, booleans, null, arrays and
 * plain objects of those; errors become nested records. Anything else is dropped (in arrays,
 * `null`, as JSON does).
 */
function jsonProp(value: unknown, depth: number, seen: object[]): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : DROP;
    case "object": {
      if (value === null) return null;
      if (depth >= MAX_PROP_DEPTH || seen.includes(value)) return DROP;
      if (isError(value)) return toRecord(value, depth + 1, seen);
      seen.push(value);
      try {
        if (Array.isArray(value)) {
          const out: unknown[] = [];
          for (let i = 0; i < value.length; i++) {
            const v = jsonProp(value[i], depth + 1, seen);
            out.push(v === DROP ? null : v);
          }
          return out;
        }
        if (!isPlain(value)) return DROP;
        const out: Record<string, unknown> = {};
        for (const key of Object.keys(value)) {
          const v = jsonProp((value as Record<string, unknown>)[key], depth + 1, seen);
          if (v !== DROP) defineOwn(out, key, v);
        }
        return out;
      } finally {
        seen.pop();
      }
    }
    default:
      return DROP;
  }
}

/**
 * Constructs an error without capturing a stack: a rebuilt error's stack would only show this
 * module's frames, and capturing it costs several times the rest of decoding an error. The
 * stack is then set to the `name: message` header alone.
 */
function construct(make: () => Error): Error {
  const limit = Error.stackTraceLimit;
  try {
    Error.stackTraceLimit = 0;
  } catch {
    return make();
  }
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

function readProp(target: object, key: string): unknown {
  try {
    return (target as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function toRecord(thrown: unknown, depth: number, seen: object[]): JournalErrorRecord {
  if (!isError(thrown)) {
    const message =
      typeof thrown === "string"
        ? thrown
        : typeof thrown === "object" &&
            thrown !== null &&
            typeof readProp(thrown, "message") === "string"
          ? (readProp(thrown, "message") as string)
          : safeString(thrown);
    const body: JournalErrorRecord["$error"] = { name: "Error", message };
    const kept = jsonProp(thrown, depth + 1, seen);
    if (kept !== DROP) body.thrown = kept;
    return { $error: body };
  }
  const name = readProp(thrown, "name");
  const message = readProp(thrown, "message");
  const body: JournalErrorRecord["$error"] = {
    name: typeof name === "string" && name.length > 0 ? name : "Error",
    message: typeof message === "string" ? message : safeString(message),
  };
  seen.push(thrown);
  try {
    for (const key of Object.keys(thrown)) {
      if (RESERVED.has(key)) continue;
      const v = jsonProp(readProp(thrown, key), depth + 1, seen);
      if (v !== DROP) defineOwn(body, key, v);
    }
    if (Object.hasOwn(thrown, "cause")) {
      const v = jsonProp(readProp(thrown, "cause"), depth + 1, seen);
      if (v !== DROP) body.cause = v;
    }
    const errors = thrown instanceof AggregateError ? readProp(thrown, "errors") : undefined;
    if (Array.isArray(errors)) {
      body.errors = errors.map((e) =>
        seen.includes(e as object) ? null : toRecord(e, depth + 1, seen),
      );
    }
  } finally {
    seen.pop();
  }
  return { $error: body };
}

function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/**
 * Turns any thrown value into an error record: `name`, `message`, and every own enumerable prop
 * whose value is plain JSON (`code`, `retryable`, …; nested errors become records). `cause` is kept
 * when JSON-able; an `AggregateError`'s `errors` become records. `stack` is never kept (it is not
 * the same on replay). A non-`Error` value is wrapped: `{ name: "Error", message, thrown }`.
 */
export function toErrorRecord(thrown: unknown): JournalErrorRecord {
  return toRecord(thrown, 0, []);
}

/** True for a `{ $error: { name, message, … } }` record (exactly one key, string name and message). */
export function isErrorRecord(value: unknown): value is JournalErrorRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  if (!isPlain(value) || !Object.hasOwn(value, "$error")) return false;
  const body = (value as { $error?: unknown }).$error;
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  const { name, message } = body as { name?: unknown; message?: unknown };
  return typeof name === "string" && typeof message === "string" && Object.keys(value).length === 1;
}

function reviveProp(value: unknown): unknown {
  return isErrorRecord(value) ? fromErrorRecord(value) : value;
}

/**
 * Rebuilds an error from its record: an instance of the built-in class named by `name`
 * (`TypeError`, `RangeError`, …, `AggregateError`) where one exists, else an `Error` whose `name`
 * is the recorded one; every recorded prop is set as an own enumerable property (never on a
 * prototype, `__proto__` included). `toErrorRecord(fromErrorRecord(r))` deep-equals `r`.
 * @throws JournalError `journal/invalid-argument` when `record` is not an error record.
 */
export function fromErrorRecord(record: JournalErrorRecord): Error {
  const body = (record as Partial<JournalErrorRecord> | null | undefined)?.$error;
  if (typeof body !== "object" || body === null || typeof body.name !== "string") {
    throw new JournalError(
      "journal/invalid-argument",
      "fromErrorRecord takes an error record { $error: { name, message, … } }; check it with isErrorRecord first.",
    );
  }
  const name = body.name;
  let error: Error;
  if (name === "AggregateError") {
    const errors = Array.isArray(body.errors) ? body.errors.map(reviveProp) : [];
    error = construct(() => new AggregateError(errors, body.message));
  } else {
    const Ctor = Object.hasOwn(BUILT_IN, name) ? (BUILT_IN[name] as ErrorCtor) : Error;
    error = construct(() => new Ctor(body.message));
    if (error.name !== name) {
      Object.defineProperty(error, "name", {
        value: name,
        enumerable: false,
        writable: true,
        configurable: true,
      });
    }
  }
  for (const key of Object.keys(body)) {
    if (RESERVED.has(key)) continue;
    defineOwn(error, key, body[key]);
  }
  Object.defineProperty(error, "stack", {
    value: `${name}: ${body.message}`,
    enumerable: false,
    writable: true,
    configurable: true,
  });
  if (Object.hasOwn(body, "cause")) {
    Object.defineProperty(error, "cause", {
      value: reviveProp(body.cause),
      enumerable: false,
      writable: true,
      configurable: true,
    });
  }
  return error;
}
