import {
  CodecError,
  DivergenceError,
  decode,
  digestArgs,
  digestText,
  encode,
  type HandleRecord,
  isCallKey,
  isErrorRecord,
  isJournalError,
  type JournalEntry,
  type JournalErrorRecord,
  type JournalOutcomeKind,
  type JournalPort,
  Replayer,
  toErrorRecord,
} from "@durablekit/handle-journal";
import { BridgeError } from "../errors";
import { type EventWindow, isPlainObject, TAG, tagOf } from "../shared/wire";
import { buildSchedule } from "./replay-schedule";

/**
 * Version of the bridge's journal payloads ("bridge journal format 1", see DESIGN.md): part of a
 * replay run's fingerprint, so a run recorded in another format is never misread.
 */
export const JOURNAL_FORMAT = 1;

/**
 * The bridge's body of one journal entry, as handle-journal codec text (journal format 1):
 * `r` the result value (handles as handle records), the error record, or the interrupt payload;
 * `ev` the call's event window as `[from, ...list]`; `m` the method names of each handle kind `r`
 * holds (`{ "<specifier>#<Kind>": ["method", …] }`), so a replay builds the program's object
 * before any target exists; `k` the handle records of `r` that name an object the run already
 * held, by their position among `r`'s handle records: the {@link handleRef} of that object;
 * `ro`, written with `m`, the methods of each kind marked read-only when the object was returned,
 * so a replay decides access to a journaled object before reviving it (a body without `ro`, from
 * an earlier version, is decided once the object is revived); `b`, the bytes the call was charged
 * toward `maxTotalBytes` (request and response or error), which a replay charges again so that the
 * limit counts across resumes (absent: nothing charged, or written by an earlier version); `f`,
 * `1` on the error of a call the bridge refused after keying it, which a replay counts toward the
 * attempt's refusals as the live run did.
 */
export interface EntryBody {
  r: unknown;
  ev?: number[];
  m?: Record<string, string[]>;
  k?: Record<string, string>;
  ro?: Record<string, string[]>;
  b?: number;
  f?: 1;
}

/** What an entry body holds besides its value (see {@link EntryBody}). */
export interface BodyParts {
  events?: EventWindow | undefined;
  /** The bytes the call was charged (`b`), when any. */
  bytes?: number | undefined;
  methods?: Record<string, string[]>;
  /** Names the handles `r` holds (the bridge's handle table knows each one's `"<specifier>#<Kind>"`). */
  handleKind?: (handle: object) => string;
  reused?: Record<string, string> | undefined;
  readOnly?: Record<string, string[]> | undefined;
  /** The bridge refused the call after keying it (`f`). */
  refused?: boolean;
}

/** The bytes an entry's body says its call was charged (0 when it says nothing sensible). */
function bytesOf(body: EntryBody): number {
  const b = body.b;
  return typeof b === "number" && Number.isSafeInteger(b) && b > 0 ? b : 0;
}

/**
 * The name a run gives an object a call returned, the same live and on replay:
 * `"<key>#<n>"`, the `n`th object (from 0, in the answer's text order) first returned by call
 * `key`. A later answer that returns the object again records this name instead of a new one.
 */
export function handleRef(key: string, ordinal: number): string {
  return `${key}#${ordinal}`;
}

/** The key of the call that first returned the object named `ref`, or null when `ref` is no such name. */
export function creatorOfRef(ref: string): string | null {
  const at = ref.lastIndexOf("#");
  if (at <= 0 || !/^(?:0|[1-9][0-9]*)$/.test(ref.slice(at + 1))) return null;
  const key = ref.slice(0, at);
  return isCallKey(key) ? key : null;
}

/** A handle record read back from the journal: a target the replay registers lazily. */
export class JournaledHandle {
  /**
   * @param ref - its {@link handleRef}: its own, or, when `reuses`, the object's the run already
   *   held when the call returned it (the replay hands the program that object again).
   */
  /**
   * @param readOnly - its methods marked read-only when the live run returned it, or null when
   *   the journal did not record them (an earlier version wrote it).
   */
  constructor(
    readonly record: HandleRecord,
    readonly methods: readonly string[],
    readonly ref: string,
    readonly reuses: boolean,
    readonly readOnly: readonly string[] | null = null,
  ) {}
}

/** Where a journaled call stands when the replay reaches its key. */
export type ReplayedCall =
  /** Not recorded: run it live (and record it). */
  | { kind: "live" }
  /**
   * Recorded with a value (handles as {@link JournaledHandle}s): answer it without running.
   * `bytes` is what the call was charged when it ran (see {@link EntryBody}).
   */
  | { kind: "value"; seq: number; at: number; value: unknown; bytes: number }
  /** Recorded with an error: answer it with this record without running. */
  | {
      kind: "error";
      seq: number;
      at: number;
      record: JournalErrorRecord;
      bytes: number;
      /** The bridge refused the call (see {@link EntryBody} `f`). */
      refused: boolean;
    }
  /** Recorded as an interrupt that was not resumed: the attempt ends interrupted again. */
  | { kind: "interrupt"; payload: unknown; bytes: number };

/**
 * A recorded top-level call whose answer is plain data or an error (no handles, not an interrupt
 * or marker): the isolate may answer it without calling the host (wire v5 `PrefetchedAnswers`).
 */
export type PlainEntry = JournalCallName & {
  seq: number;
  at: number;
  /** The length of the entry's codec text: what sending its answer ahead weighs, about. */
  chars: number;
  /** What the call was charged when it ran (see {@link EntryBody}). */
  bytes: number;
  /** The bridge refused the call after keying it (see {@link EntryBody}). */
  refused: boolean;
} & ({ kind: "value"; value: unknown } | { kind: "error"; record: JournalErrorRecord });

/** What a recorded (or resolved) entry tells the isolate: its order and time. */
export interface Recorded {
  seq: number;
  at: number;
}

/** The journal module name of a call: the module specifier, or `"<specifier>#<Kind>"` for a handle. */
export interface JournalCallName {
  key: string;
  module: string;
  method: string;
  argsDigest: string;
}

function eventsOf(window: EventWindow | undefined): number[] | undefined {
  return window === undefined ? undefined : [window.from, ...window.list];
}

/** Most events one call's window may carry (a bound on the work of checking it). */
const MAX_WINDOW_EVENTS = 1_000_000;

/** An isolate's event window, checked, and what it weighs in the journal. */
export interface CheckedWindow {
  window: EventWindow;
  /** The characters of its journal form (`[from, ...list]` as JSON text). */
  bytes: number;
}

/** Characters of a safe integer as JSON text. */
function digits(n: number): number {
  let count = n < 0 ? 2 : 1;
  for (let v = Math.abs(n); v >= 10; v = Math.floor(v / 10)) count++;
  return count;
}

/**
 * An isolate's event window, checked (it is untrusted): an object with a safe integer `from` not
 * negative and an array `list` of at most a million safe integers other than 0, read by index (no
 * method of the isolate's values runs), and its size in the journal, which the call is charged.
 * @throws BridgeError `bridge/invalid-argument` (wire mismatch).
 */
export function checkEvents(value: unknown): CheckedWindow | undefined {
  if (value === undefined || value === null) return undefined;
  const malformed = () =>
    new BridgeError("bridge/invalid-argument", "Malformed event window (wire mismatch).");
  if (typeof value !== "object") throw malformed();
  const { from, list } = value as Partial<EventWindow>;
  if (
    typeof from !== "number" ||
    !Number.isSafeInteger(from) ||
    from < 0 ||
    !Array.isArray(list) ||
    list.length > MAX_WINDOW_EVENTS
  ) {
    throw malformed();
  }
  // Copied into a new array: what is checked is what is stored.
  const events: number[] = new Array(list.length);
  let bytes = 2 + digits(from);
  for (let i = 0; i < list.length; i++) {
    const n: unknown = list[i];
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n === 0) throw malformed();
    events[i] = n;
    bytes += 1 + digits(n);
  }
  return { window: { from, list: events }, bytes };
}

/**
 * The journal of one attempt of a replay run, host side: the entries loaded once when the attempt
 * starts, the schedule built from their event windows, and every write of the attempt. Each call
 * that got a key is checked against the entry at its key (same module, method and arguments) and
 * answered from it, or run live and recorded before its answer is delivered. A port failure is
 * thrown to the run, which ends the attempt: an answer is never delivered unrecorded.
 */
export class RunJournal {
  readonly executionId: string;
  /** The recorded event order the isolate re-imposes (`[]` when nothing is recorded). */
  readonly schedule: number[];
  /** Entries loaded when the attempt started. */
  readonly size: number;
  /** The loaded top-level entries with plain answers, in key order (what the isolate may answer). */
  readonly plain: readonly PlainEntry[];
  readonly #port: JournalPort;
  readonly #replayer: Replayer;
  readonly #now: () => number;
  /** The keys of the loaded `handle` entries: the calls whose answers named objects. */
  readonly #namers: ReadonlySet<string>;

  /**
   * Loads the execution's journal through `port` (one read) and builds its schedule.
   * @throws BridgeError `bridge/diverged` when the recorded event windows disagree.
   */
  constructor(
    port: JournalPort,
    executionId: string,
    now: () => number,
    entries?: readonly JournalEntry[],
  ) {
    const loaded = entries ?? port.lookup(executionId);
    this.executionId = executionId;
    this.#port = port;
    this.#now = now;
    this.#replayer = new Replayer(loaded);
    this.size = loaded.length;
    const namers = new Set<string>();
    for (const entry of loaded) if (entry.outcome === "handle") namers.add(entry.key);
    this.#namers = namers;
    const windows: EventWindow[] = [];
    const plain: PlainEntry[] = [];
    for (const entry of loaded) {
      const body = bodyOf(entry, namers);
      const ev = body.ev;
      if (ev !== undefined && ev.length > 0) {
        windows.push({ from: ev[0] as number, list: ev.slice(1) });
      }
      const top = entry.key.indexOf(".") < 0;
      if (top && (entry.outcome === "value" || entry.outcome === "error")) {
        const name = {
          key: entry.key,
          module: entry.module,
          method: entry.method,
          argsDigest: entry.argsDigest,
          seq: entry.seq,
          at: entry.recordedAt,
          chars: entry.payload?.length ?? 0,
          bytes: bytesOf(body),
          refused: body.f === 1,
        };
        const r = body.r;
        plain.push(
          entry.outcome === "error"
            ? { ...name, kind: "error", record: isErrorRecord(r) ? r : toErrorRecord(r) }
            : { ...name, kind: "value", value: r },
        );
      }
    }
    this.schedule = buildSchedule(windows);
    this.plain = plain;
  }

  // ── Replay ─────────────────────────────────────────────────────────────────

  /**
   * The recorded outcome of the call at `call.key`, or `live` when it was never recorded.
   * @throws BridgeError `bridge/diverged` when another call is recorded at the key;
   *   `bridge/unsafe-to-repeat` when the recorded call is an unsettled unsafeToRepeat marker.
   */
  next(call: JournalCallName): ReplayedCall {
    const entry = this.match(call);
    if (entry === null) return { kind: "live" };
    const body = bodyOf(entry, this.#namers);
    const bytes = bytesOf(body);
    switch (entry.outcome) {
      case "interrupt":
        return { kind: "interrupt", payload: body.r, bytes };
      case "error": {
        const r = body.r;
        const record = isErrorRecord(r) ? r : toErrorRecord(r);
        const refused = body.f === 1;
        return { kind: "error", seq: entry.seq, at: entry.recordedAt, record, bytes, refused };
      }
      default:
        return { kind: "value", seq: entry.seq, at: entry.recordedAt, value: body.r, bytes };
    }
  }

  /**
   * The entry recorded at `call.key`, not decoded (what checking a call the isolate answered
   * itself needs), or null when nothing is recorded there: the replay moves past it as
   * {@link next} does.
   * @throws as {@link next}.
   */
  match(call: JournalCallName): JournalEntry | null {
    let step: ReturnType<Replayer["next"]>;
    try {
      step = this.#replayer.next(call.key, call.module, call.method, call.argsDigest);
    } catch (error) {
      if (error instanceof DivergenceError) {
        throw new BridgeError(
          "bridge/diverged",
          `The replay diverged at call ${error.key}: the journal recorded ${error.expected}, the program now made ${error.actual}. The program, its input or what its calls returned changed since the run was recorded; start a new execution.`,
          { cause: error },
        );
      }
      if (isJournalError(error, "journal/unsafe-to-repeat")) {
        throw new BridgeError(
          "bridge/unsafe-to-repeat",
          `The replay reached call ${call.key} (${call.module}.${call.method}), which is marked unsafeToRepeat and started without its outcome being recorded; it is not run twice, so the run fails. Start a new execution.`,
          { cause: error },
        );
      }
      throw error;
    }
    return step.status === "caught-up" ? null : step.entry;
  }

  /**
   * When the program ended: a journal with entries the replay never reached is a divergence.
   * @throws BridgeError `bridge/diverged` naming the first key left.
   */
  checkEnded(): void {
    const left = this.#replayer.remaining;
    if (left === 0) return;
    throw new BridgeError(
      "bridge/diverged",
      `The replay diverged: the program ended with ${left} recorded call(s) it did not make again (the journal holds calls past where the program now stops). Start a new execution.`,
    );
  }

  // ── Recording ──────────────────────────────────────────────────────────────

  /**
   * Records a call's outcome (one port write) before its answer is delivered.
   * @throws the port's error (the run ends; the answer is not delivered).
   */
  record(call: JournalCallName, outcome: JournalOutcomeKind, body: string): Recorded {
    const at = this.#now();
    const { seq } = this.#port.record({
      executionId: this.executionId,
      key: call.key,
      module: call.module,
      method: call.method,
      argsDigest: call.argsDigest,
      outcome,
      payload: body,
      recordedAt: at,
    });
    return { seq, at };
  }

  /**
   * Resolves an `unsafe` marker to its call's outcome (one port write).
   * @throws BridgeError `bridge/conflict` when the marker is no longer pending.
   */
  resolve(key: string, seq: number, outcome: JournalOutcomeKind, body: string): Recorded {
    const at = this.#now();
    if (!this.#port.resolve(this.executionId, key, outcome, body, at)) {
      throw new BridgeError(
        "bridge/conflict",
        `Call ${key} of execution ${this.executionId} is no longer pending in the journal; another attempt settled it.`,
      );
    }
    return { seq, at };
  }
}

// ── Bodies ────────────────────────────────────────────────────────────────────

/**
 * The codec text of an entry body: `r` and the {@link BodyParts} given.
 * @throws CodecError when `r` is not data the codec carries.
 */
export function encodeBody(r: unknown, parts: BodyParts = {}): string {
  const body: EntryBody = { r };
  const ev = eventsOf(parts.events);
  if (ev !== undefined) body.ev = ev;
  if (parts.methods !== undefined) body.m = parts.methods;
  if (parts.reused !== undefined) body.k = parts.reused;
  if (parts.readOnly !== undefined) body.ro = parts.readOnly;
  if (parts.bytes !== undefined && parts.bytes > 0) body.b = parts.bytes;
  if (parts.refused === true) body.f = 1;
  const handleKind = parts.handleKind;
  return encode(
    body,
    handleKind === undefined ? { path: "result" } : { path: "result", handleKind },
  );
}

/**
 * The body an `interrupt` entry is resolved to on resume: `r` the resume value, the same `ev` and `b`.
 * @throws CodecError when `value` is not data.
 */
export function resumedBody(entry: JournalEntry, value: unknown): string {
  const { ev, b } = entry.payload === null ? ({} as EntryBody) : bodyOf(entry);
  const body: EntryBody = { r: value };
  if (ev !== undefined) body.ev = ev;
  if (b !== undefined) body.b = b;
  return encode(body, { path: "value" });
}

/**
 * An entry's body, decoded: handle records become {@link JournaledHandle}s with their methods and
 * names.
 * @param namers - the keys of the journal's `handle` entries: a name in `k` must be one of theirs.
 * @throws CodecError `journal/corrupt` for a payload this format did not write, e.g. a `k` that
 *   names no object the journal's answers returned.
 */
export function bodyOf(entry: JournalEntry, namers?: ReadonlySet<string>): EntryBody {
  if (entry.payload === null) return { r: undefined };
  const handles: JournaledHandle[] = [];
  const body = decode(entry.payload, {
    revive: (record) => {
      // Built once the whole body (and so its `m` and `k`) is read; decode revives in text order.
      const h = new JournaledHandle(record, [], "", false);
      handles.push(h);
      return h;
    },
  }) as EntryBody;
  if (typeof body !== "object" || body === null || !Object.hasOwn(body, "r")) {
    return { r: body };
  }
  const m = body.m;
  const k = typeof body.k === "object" && body.k !== null ? body.k : undefined;
  const ro = typeof body.ro === "object" && body.ro !== null ? body.ro : undefined;
  let ordinal = 0;
  for (let i = 0; i < handles.length; i++) {
    const h = handles[i] as JournaledHandle;
    const kind = h.record.$handle;
    const names = m !== undefined && Object.hasOwn(m, kind) ? m[kind] : [];
    const same = k !== undefined && Object.hasOwn(k, i) ? k[i] : undefined;
    if (same !== undefined) checkRef(entry.key, same, namers);
    const fields = h as {
      methods: readonly string[];
      ref: string;
      reuses: boolean;
      readOnly: readonly string[] | null;
    };
    fields.methods = Array.isArray(names) ? names : [];
    if (ro !== undefined) {
      const marked = Object.hasOwn(ro, kind) ? ro[kind] : [];
      fields.readOnly = Array.isArray(marked) ? marked : [];
    }
    fields.reuses = same !== undefined;
    fields.ref = same !== undefined ? (same as string) : handleRef(entry.key, ordinal++);
  }
  return body;
}

/**
 * Refuses a name in an entry's `k` that no live run writes: not `"<key>#<n>"`, or naming a call
 * whose answer returned no object. Read as a new object, it would give the program's calls on it
 * keys the journal never held (so run live again what was journaled under the right ones).
 * @throws CodecError `journal/corrupt`.
 */
function checkRef(key: string, ref: unknown, namers: ReadonlySet<string> | undefined): void {
  const creator = typeof ref === "string" ? creatorOfRef(ref) : null;
  if (creator !== null && (namers === undefined || namers.has(creator))) return;
  throw new CodecError(
    "journal/corrupt",
    "k",
    `Journal entry ${key} names the object it returned again as ${String(JSON.stringify(ref)).slice(0, 80)}, which no call of this journal returned; the journal was not written by this format (or was edited), so the run is not replayed from it.`,
  );
}

/**
 * The digest of a call's arguments as the isolate sent them, with what a replay can reproduce:
 * a handle as the key of the call that created it (`hostKey(id)`), a signal as whether it was
 * aborted, a callback or stream as its kind. Never throws: arguments the codec cannot carry digest
 * by their error, and the call is refused later.
 */
export function digestCallArgs(args: readonly unknown[], hostKey: (id: unknown) => string): string {
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "function") return { $callback: true };
    if (typeof v !== "object" || v === null || depth > 100) return v;
    if (Array.isArray(v)) return v.map((item) => walk(item, depth + 1));
    if (v instanceof ReadableStream) return { $stream: true };
    if (!isPlainObject(v)) return v;
    const tag = tagOf(v);
    if (tag === "h") return { $h: hostKey((v as { id?: unknown }).id) };
    if (tag === "s") return { $signal: (v as { aborted?: unknown }).aborted === true };
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(v)) {
      if (key === TAG) continue;
      Object.defineProperty(out, key, {
        value: walk((v as Record<string, unknown>)[key], depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  };
  try {
    // Primitives only (the common case): the walk would copy them unchanged.
    let primitives = true;
    for (const v of args)
      if ((typeof v === "object" && v !== null) || typeof v === "function") primitives = false;
    return digestArgs(primitives ? args : (walk(args, 0) as unknown[])).digest;
  } catch (error) {
    return digestText(`unencodable:${(error as { code?: string }).code ?? "?"}`);
  }
}
