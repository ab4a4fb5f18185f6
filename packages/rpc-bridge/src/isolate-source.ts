import { MAX_DEPTH } from "./data-size";
import { TAG } from "./wire";

/**
 * Source of the modules the bridge adds to every isolate: the runner (main module), the runtime
 * (the isolate half of the bridge) and one shim per host module. The runtime is the only holder of
 * the bridge stub; programs cannot import it (their imports are checked and rewritten).
 */

const tag = JSON.stringify(TAG);

/**
 * The isolate half of the bridge: turns every call into one `invoke(handleId, method, args,
 * special)`, builds objects for the handles the host returns, rebuilds errors from records exactly
 * as handle-journal's `fromErrorRecord` does, and mirrors AbortSignals passed as arguments.
 * A call whose arguments are all primitives is sent as it is (no walk), and its answer is
 * unwrapped in one `then` on the Workers RPC promise (no async function around it).
 */
export const RUNTIME_SOURCE = `
const TAG = ${tag};
const MAX_DEPTH = ${MAX_DEPTH};
let bridge = null;
let ended = false;
const ids = new WeakMap();
const byId = new Map();
const signals = new WeakMap();
let nextSignal = 1;
let special = 0;
const BUILT_IN = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
const RESERVED = new Set(["name", "message", "stack", "cause", "errors"]);

// What the arguments of the call being sent weigh at least (string lengths, bytes as base64): a
// call over maxRequestBytes is refused here, before anything crosses.
let maxRequest = Infinity;
let weight = 0;
export function attach(stub, options) {
  bridge = stub;
  if (options && typeof options.maxRequestBytes === "number") maxRequest = options.maxRequestBytes;
}
function weigh(n) { weight += n; }
function bytesWeight(n) { return Math.floor(n / 3) * 4; }
function tooLarge() {
  return fromRecord({ $error: { name: "BridgeError", message: "The call's arguments take more than " + maxRequest + " bytes (maxRequestBytes); it was not sent. Send less per call.", code: "bridge/limit-request-bytes", retryable: false, path: "args" } });
}
// A view crosses as its own bytes only, never with the rest of its buffer.
function ownBytes(v) {
  weigh(bytesWeight(v.byteLength));
  if (v.byteOffset === 0 && v.byteLength === v.buffer.byteLength) return v;
  if (v instanceof DataView) return new DataView(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
  return v.slice();
}
export function end() { ended = true; }

function define(target, key, value) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
function plain(v) { const p = Object.getPrototypeOf(v); return p === Object.prototype || p === null; }
function isRecord(v) {
  if (typeof v !== "object" || v === null || Array.isArray(v) || !plain(v) || !Object.hasOwn(v, "$error")) return false;
  const b = v.$error;
  return typeof b === "object" && b !== null && typeof b.name === "string" && typeof b.message === "string" && Object.keys(v).length === 1;
}
function reviveProp(v) { return isRecord(v) ? fromRecord(v) : v; }
export function fromRecord(record) {
  const body = record.$error;
  let error;
  if (body.name === "AggregateError") {
    error = new AggregateError(Array.isArray(body.errors) ? body.errors.map(reviveProp) : [], body.message);
  } else {
    const Ctor = Object.hasOwn(BUILT_IN, body.name) ? BUILT_IN[body.name] : Error;
    error = new Ctor(body.message);
    if (error.name !== body.name) Object.defineProperty(error, "name", { value: body.name, enumerable: false, writable: true, configurable: true });
  }
  for (const key of Object.keys(body)) if (!RESERVED.has(key)) define(error, key, body[key]);
  if (Object.hasOwn(body, "cause")) Object.defineProperty(error, "cause", { value: reviveProp(body.cause), enumerable: false, writable: true, configurable: true });
  return error;
}
function jsonProp(v, depth) {
  if (typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : undefined;
  if (typeof v !== "object" || v === null) return v === null ? null : undefined;
  if (depth > 16) return undefined;
  if (v instanceof Error) return toRecord(v, depth + 1);
  if (Array.isArray(v)) return v.map((x) => { const j = jsonProp(x, depth + 1); return j === undefined ? null : j; });
  if (!plain(v)) return undefined;
  const out = {};
  for (const k of Object.keys(v)) { const j = jsonProp(v[k], depth + 1); if (j !== undefined) define(out, k, j); }
  return out;
}
// Building an error record never throws: a value whose properties throw (a hostile Proxy) gets a fallback record.
export function toRecord(thrown, depth = 0) {
  try { return buildRecord(thrown, depth); }
  catch { return { $error: { name: "Error", message: "The thrown value could not be read (its properties threw); it was replaced." } }; }
}
function buildRecord(thrown, depth) {
  if (!(thrown instanceof Error)) {
    const body = { name: "Error", message: typeof thrown === "string" ? thrown : String(thrown && typeof thrown.message === "string" ? thrown.message : thrown) };
    const kept = jsonProp(thrown, depth + 1);
    if (kept !== undefined) body.thrown = kept;
    return { $error: body };
  }
  const body = { name: typeof thrown.name === "string" && thrown.name ? thrown.name : "Error", message: String(thrown.message) };
  for (const k of Object.keys(thrown)) { if (RESERVED.has(k)) continue; const j = jsonProp(thrown[k], depth + 1); if (j !== undefined) define(body, k, j); }
  if (Object.hasOwn(thrown, "cause")) { const j = jsonProp(thrown.cause, depth + 1); if (j !== undefined) body.cause = j; }
  return { $error: body };
}

function release(id) {
  byId.delete(id);
  if (ended || bridge === null) return;
  try { bridge.dispose(id).then(undefined, () => {}); } catch {}
}
function target(d) {
  const known = byId.get(d.id);
  if (known) return known;
  const id = d.id;
  const obj = {};
  for (const m of d.m) define(obj, m, (...args) => call(id, m, args));
  Object.defineProperty(obj, Symbol.dispose, { value: () => release(id) });
  Object.defineProperty(obj, Symbol.toStringTag, { value: d.k });
  Object.freeze(obj);
  ids.set(obj, id);
  byId.set(id, obj);
  return obj;
}
function func(d) {
  const known = byId.get(d.id);
  if (known) return known;
  const id = d.id;
  const fn = (...args) => call(id, "", args);
  Object.defineProperty(fn, Symbol.dispose, { value: () => release(id) });
  ids.set(fn, id);
  byId.set(id, fn);
  return fn;
}
// A host stream: read through; at its end the host says whether it ended by an error, and the
// program's read rejects with that error (one round trip per stream, none per chunk).
function hostStream(id, inner) {
  const reader = inner.getReader();
  return new ReadableStream({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (!done) { controller.enqueue(value); return; }
      let record = null;
      if (!ended && bridge !== null) record = await bridge.streamEnd(id);
      if (record) controller.error(fromRecord(record)); else controller.close();
    },
    cancel(reason) { return reader.cancel(reason); },
  }, { highWaterMark: 0 });
}
function revive(v, depth) {
  if (typeof v !== "object" || v === null || depth > MAX_DEPTH) return v;
  if (Array.isArray(v)) { for (let i = 0; i < v.length; i++) v[i] = revive(v[i], depth + 1); return v; }
  if (!plain(v)) return v;
  if (Object.hasOwn(v, TAG)) {
    const t = v[TAG];
    if (t === "t") return target(v);
    if (t === "f") return func(v);
    if (t === "e") return fromRecord(v.r);
    if (t === "u") return new URL(v.href);
    if (t === "r") return hostStream(v.id, v.s);
  }
  for (const k of Object.keys(v)) define(v, k, revive(v[k], depth + 1));
  return v;
}
function signalRecord(s) {
  let id = signals.get(s);
  if (id === undefined) {
    id = nextSignal++;
    signals.set(s, id);
    const sid = id;
    if (!s.aborted) s.addEventListener("abort", () => {
      if (ended || bridge === null) return;
      try { bridge.abort(sid, toRecord(s.reason)).then(undefined, () => {}); } catch {}
    }, { once: true });
  }
  return s.aborted ? { [TAG]: "s", id, aborted: true, reason: toRecord(s.reason) } : { [TAG]: "s", id, aborted: false };
}
function out(v, depth) {
  if (typeof v === "function") { special = 1; const id = ids.get(v); return id === undefined ? callbackOf(v) : { [TAG]: "h", id }; }
  if (typeof v === "string") { weigh(v.length); return v; }
  if (typeof v !== "object" || v === null || depth > MAX_DEPTH) return v;
  if (ArrayBuffer.isView(v)) return ownBytes(v);
  if (v instanceof ArrayBuffer) { weigh(bytesWeight(v.byteLength)); return v; }
  const id = ids.get(v);
  if (id !== undefined) { special = 1; return { [TAG]: "h", id }; }
  if (v instanceof AbortSignal) { special = 1; return signalRecord(v); }
  if (v instanceof ReadableStream) { special = 1; return v; }
  if (Array.isArray(v)) {
    let copy;
    for (let i = 0; i < v.length; i++) { const x = out(v[i], depth + 1); if (x !== v[i]) (copy ??= v.slice())[i] = x; }
    return copy ?? v;
  }
  if (!plain(v)) return v;
  let copy;
  for (const k of Object.keys(v)) { const x = out(v[k], depth + 1); if (x !== v[k]) { copy ??= { ...v }; define(copy, k, x); } }
  return copy ?? v;
}

// A program callback crosses as a wrapper: host code calls it with its arguments shaped like a
// call's result (revived here: handles, errors, URLs) and gets back a reply shaped like a call's
// arguments (handles passed back, signals, callbacks), or an error record; it never rejects.
const callbacks = new WeakMap();
function reply(value) {
  special = 0;
  const w = out(value, 0);
  if (special === 1 || (typeof w === "object" && w !== null && Object.hasOwn(w, TAG))) return { [TAG]: "v", v: w };
  return w;
}
function refuse(error) { return { [TAG]: "x", r: toRecord(error) }; }
function callbackOf(f) {
  let wrapper = callbacks.get(f);
  if (wrapper) return wrapper;
  wrapper = (wire) => {
    if (ended) return refuse(new Error("The run has ended."));
    try {
      const args = answerOf(wire);
      return Promise.resolve(f(...(Array.isArray(args) ? args : []))).then(reply, refuse);
    } catch (error) {
      return refuse(error);
    }
  };
  callbacks.set(f, wrapper);
  return wrapper;
}

// Never settles: the run has ended and this isolate makes no more progress through the bridge.
function halted() { return new Promise(() => {}); }
function answerOf(answer) {
  if (typeof answer === "object" && answer !== null && Object.hasOwn(answer, TAG)) {
    if (answer[TAG] === "halt") { ended = true; return halted(); }
    if (answer[TAG] === "x") throw fromRecord(answer.r);
    return revive(answer.v, 0);
  }
  return answer;
}

export function call(id, method, args) {
  if (ended) return halted();
  if (bridge === null) return Promise.reject(new Error("The bridge is not attached: host modules can be called only while the program runs."));
  let wire = args;
  let flag = 0;
  let strings = 0;
  for (let i = 0; i < args.length; i++) {
    const v = args[i];
    if (typeof v === "string") strings += v.length;
    else if ((typeof v === "object" && v !== null) || typeof v === "function") {
      special = 0;
      weight = 0;
      wire = out(args, 0);
      flag = special;
      strings = weight;
      break;
    }
  }
  if (strings > maxRequest) return Promise.reject(tooLarge());
  try {
    return bridge.invoke(id, method, wire, flag).then(answerOf);
  } catch (error) {
    return Promise.reject(error);
  }
}

export function fn(id, name) {
  return (...args) => call(id, name, args);
}
`;

/**
 * The main module: a WorkerEntrypoint whose `evaluate(input, bridge)` imports the program, runs
 * its default export and answers `{ v }` or `{ e: ErrorRecord, u? }` (`u` when the program left
 * an unhandled rejection). It never rejects for a program error.
 */
export const RUNNER_SOURCE = `
import { WorkerEntrypoint } from "cloudflare:workers";
import { attach, end, toRecord } from "./__dk_runtime.js";

const unhandled = new Map();
addEventListener("unhandledrejection", (event) => { unhandled.set(event.promise, event.reason); event.preventDefault(); });
addEventListener("rejectionhandled", (event) => { unhandled.delete(event.promise); });
// What a program throws inside a timer callback is kept (and fails the run), not lost.
const thrownInTimers = [];
function guard(callback) {
  if (typeof callback !== "function") return callback;
  return function (...args) { try { return callback.apply(this, args); } catch (error) { thrownInTimers.push(error); } };
}
const realSetTimeout = globalThis.setTimeout;
const realSetInterval = globalThis.setInterval;
globalThis.setTimeout = (callback, ms, ...args) => realSetTimeout(guard(callback), ms, ...args);
globalThis.setInterval = (callback, ms, ...args) => realSetInterval(guard(callback), ms, ...args);

export default class extends WorkerEntrypoint {
  async evaluate(input, bridge, options) {
    attach(bridge, options);
    try {
      const program = await import("./__dk_program.js");
      if (typeof program.default !== "function") {
        return { e: { $error: { name: "TypeError", message: "The program's default export must be a function: export default async function (input) { … }." } } };
      }
      const value = await program.default(input);
      // One macrotask turn: a rejection left unhandled just before return is reported by then.
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (unhandled.size > 0) return { e: toRecord(unhandled.values().next().value), u: 1 };
      if (thrownInTimers.length > 0) return { e: toRecord(thrownInTimers[0]), u: 2 };
      return { v: value };
    } catch (error) {
      return { e: toRecord(error) };
    } finally {
      end();
    }
  }
}
`;

/** The shim of a host module: one export per function, each calling through the runtime. */
export function shimSource(handleId: number, exportNames: Iterable<string>): string {
  const lines = ['import { fn } from "./__dk_runtime.js";'];
  let index = 0;
  for (const name of exportNames) {
    lines.push(`const f${index} = fn(${handleId}, ${JSON.stringify(name)});`);
    lines.push(`export { f${index} as ${name} };`);
    index++;
  }
  return lines.join("\n");
}
