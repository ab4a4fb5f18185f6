import {
  CodecError,
  decode,
  digestArgs,
  digestText,
  encode,
  type HandleRecord,
  isCallKey,
  type JournalEntry,
} from "@durablekit/handle-journal";
import { BridgeError } from "../errors";
import { type EventWindow, isPlainObject, TAG, tagOf } from "../shared/wire";

// Journal format 1: what the bridge writes in a journal entry's payload, and how it reads it back.
// The cursor that walks a run's entries is `RunJournal` (run-journal.ts).

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
export function bytesOf(body: EntryBody): number {
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
