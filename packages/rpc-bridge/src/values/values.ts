import { RpcTarget } from "cloudflare:workers";
import { handle, toErrorRecord } from "@durablekit/handle-journal";
import { BridgeError } from "../errors";
import { JournaledHandle } from "../replay/journal-format";
import type { HandleTable } from "../run/handle-table";
import { isPlainObject, setOwn, TAG, type TargetDescriptor, tagOf } from "../shared/wire";
import { MAX_DEPTH } from "./data-size";

/**
 * Where a walk is, kept as a stack of keys and indexes and formatted (`args[0].when`) only when an
 * error names it, so walking a value builds no path strings.
 */
class WalkPath {
  readonly #root: string;
  readonly #steps: Array<string | number> = [];

  constructor(root: string) {
    this.#root = root;
  }

  push(step: string | number): void {
    this.#steps.push(step);
  }

  pop(): void {
    this.#steps.pop();
  }

  toString(): string {
    let out = this.#root;
    for (const step of this.#steps) out += typeof step === "number" ? `[${step}]` : `.${step}`;
    return out;
  }
}

function tooDeep(path: WalkPath): BridgeError {
  const where = path.toString();
  return new BridgeError(
    "bridge/unserializable",
    `The value at ${where} nests deeper than ${MAX_DEPTH} levels or is cyclic; send a flatter value.`,
    { path: where },
  );
}

type Walk = (value: unknown, path: WalkPath, depth: number) => unknown;

/**
 * Walks the items of an array or plain object with `walk`, copying the container only when an
 * item changes (so plain data is never copied).
 */
function mapItems(container: object, path: WalkPath, depth: number, walk: Walk): unknown {
  if (Array.isArray(container)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < container.length; i++) {
      path.push(i);
      const item = walk(container[i], path, depth + 1);
      path.pop();
      if (item !== container[i]) {
        copy ??= container.slice();
        copy[i] = item;
      }
    }
    return copy ?? container;
  }
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(container)) {
    const item = (container as Record<string, unknown>)[key];
    path.push(key);
    const next = walk(item, path, depth + 1);
    path.pop();
    if (next !== item) {
      copy ??= { ...container };
      setOwn(copy, key, next);
    }
  }
  return copy ?? container;
}

/** A host result made ready to cross: handles registered, errors and URLs as tagged records. */
export interface OutgoingValue {
  wire: unknown;
  /** The wire value holds tagged records the isolate must revive. */
  special: boolean;
  /** The wire value holds ReadableStreams (left out of the byte count). */
  streams: boolean;
  /** The wire value names an object the run already held, or one object twice. */
  reuses: boolean;
}

/**
 * Where {@link writeResult} registers what it meets: the run's handle table for RpcTargets and
 * functions, and for the journaled objects of a replayed answer, `addJournaled` (a replay's
 * `ReplayHandles`); without it such an object is refused as not data.
 */
export interface HandleSink {
  addTarget: HandleTable["addTarget"];
  addFunction: HandleTable["addFunction"];
  addJournaled?: (
    journaled: JournaledHandle,
    creatorKey: string,
    fresh: number[],
  ) => TargetDescriptor;
}

/**
 * Walks a host function's result: each RpcTarget and function is registered in the run's handle
 * table and replaced by its descriptor; errors and URLs become tagged records; ReadableStreams,
 * bytes and other codec values stay as they are for Workers RPC to carry. The ids it registers are pushed to `fresh`, also when it throws, so a refused response can release them.
 * @throws BridgeError `bridge/unserializable` for a plain object using the reserved tag key, or a cyclic value.
 */
export function writeResult(
  value: unknown,
  table: HandleSink,
  specifier: string,
  creatorKey: string,
  fresh: number[],
  root = "result",
  wrapStream?: (stream: ReadableStream) => unknown,
): OutgoingValue {
  const out: OutgoingValue = { wire: value, special: false, streams: false, reuses: false };
  const walk: Walk = (v, path, depth) => {
    if (typeof v === "function") {
      out.special = true;
      return table.addFunction(v as (...args: never[]) => unknown, specifier, creatorKey, fresh);
    }
    if (typeof v !== "object" || v === null) return v;
    if (depth > MAX_DEPTH) throw tooDeep(path);
    if (v instanceof JournaledHandle) {
      if (table.addJournaled === undefined) {
        throw new BridgeError("bridge/unserializable", "A journaled object is not data.");
      }
      out.special = true;
      return table.addJournaled(v, creatorKey, fresh);
    }
    if (v instanceof RpcTarget) {
      out.special = true;
      const registered = fresh.length;
      const descriptor = table.addTarget(v, specifier, creatorKey, fresh);
      if (fresh.length === registered) out.reuses = true;
      return descriptor;
    }
    if (Array.isArray(v)) return mapItems(v, path, depth, walk);
    if (typeof (v as { [handle.serialize]?: unknown })[handle.serialize] === "function") {
      // A journal handle is not an RpcTarget: Workers RPC cannot carry it (refused before it crosses).
      const where = path.toString();
      throw new BridgeError(
        "bridge/unserializable",
        `The object at ${where} is a journal handle ([handle.serialize]), not an RpcTarget; return an RpcTarget or plain data.`,
        { path: where },
      );
    }
    if (!isPlainObject(v)) {
      if (v instanceof ReadableStream) {
        out.streams = true;
        if (wrapStream) {
          out.special = true;
          return wrapStream(v);
        }
      } else if (v instanceof Error) {
        out.special = true;
        return { [TAG]: "e", r: toErrorRecord(v) };
      } else if (v instanceof URL) {
        out.special = true;
        return { [TAG]: "u", href: v.href };
      }
      return v;
    }
    if (Object.hasOwn(v, TAG)) {
      const where = path.toString();
      throw new BridgeError(
        "bridge/unserializable",
        `The object at ${where} uses the bridge's reserved key; rename that property.`,
        { path: where },
      );
    }
    return mapItems(v, path, depth, walk);
  };
  out.wire = walk(value, new WalkPath(root), 0);
  return out;
}

/** A handle table for data: anything that would register a handle is not data. */
const DATA_ONLY: HandleSink = {
  addFunction: () => {
    throw new BridgeError("bridge/unserializable", "A function is not data.");
  },
  addTarget: () => {
    throw new BridgeError("bridge/unserializable", "An RpcTarget is not data.");
  },
};

/**
 * Refuses data a call could not be answered with, by the same walk that shapes an answer
 * ({@link writeResult}): a plain object using the bridge's reserved key, or nesting deeper than
 * `MAX_DEPTH`. What `resume` checks a value with before it takes it, so a value the replay would
 * fail on is refused while the run is still resumable.
 * @throws BridgeError `bridge/unserializable` with the path.
 */
export function checkAnswerable(value: unknown, root: string): void {
  writeResult(value, DATA_ONLY, "", "", [], root);
}

/** Resolves what the isolate passed back: handles, mirrored signals and callbacks. */
export interface ArgumentReader {
  /** The target or function of a handle id the program passed back (`path` names where, for errors). */
  handle(id: unknown, path: string): unknown;
  /** A host AbortSignal mirroring the program's signal `id` for the rest of the call. */
  signal(id: unknown, aborted: boolean, reason: unknown): AbortSignal;
  /** A guarded host function calling the program's callback while the call lasts. */
  callback(stub: (...args: unknown[]) => unknown): (...args: unknown[]) => unknown;
  /** A ReadableStream the program passed (checked in replay runs); absent: passed as is. */
  stream?(stream: ReadableStream, path: string): ReadableStream;
}

/**
 * Turns the arguments of a call flagged special into host values: handle records into the targets
 * and functions they name, signal records into AbortSignals, callbacks into guarded functions.
 */
export function readArgs(args: readonly unknown[], reader: ArgumentReader): unknown[] {
  const walk: Walk = (v, path, depth) => {
    if (typeof v === "function") return reader.callback(v as (...args: unknown[]) => unknown);
    if (typeof v !== "object" || v === null) return v;
    if (depth > MAX_DEPTH) throw tooDeep(path);
    if (Array.isArray(v)) return mapItems(v, path, depth, walk);
    if (!isPlainObject(v)) {
      return v instanceof ReadableStream && reader.stream ? reader.stream(v, path.toString()) : v;
    }
    const tag = tagOf(v);
    if (tag === "h") return reader.handle((v as { id?: unknown }).id, path.toString());
    if (tag === "s") {
      const { id, aborted, reason } = v as { id?: unknown; aborted?: unknown; reason?: unknown };
      return reader.signal(id, aborted === true, reason);
    }
    return mapItems(v, path, depth, walk);
  };
  return walk(args, new WalkPath("args"), 0) as unknown[];
}
