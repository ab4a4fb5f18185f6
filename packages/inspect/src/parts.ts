import type { ChatTurns } from "@durablekit/chat-adapter";
import type { Executor } from "@durablekit/rpc-bridge";
import type { DurableStreamsSubscriptions } from "@durablekit/sse";
import type { Streams } from "@durablekit/streams";
import type { Tasks } from "@durablekit/tasks";
import { InspectError } from "./errors";

/** The read methods of `Streams` the inspector calls, and nothing else. */
export type StreamsReader = Readonly<Pick<Streams, "list" | "status" | "readPage">>;

/** The read method of sse's `DurableStreamsSubscriptions` the inspector calls, and nothing else. */
export type SubscriptionsReader = Readonly<Pick<DurableStreamsSubscriptions, "list">>;

/** The read methods of `ChatTurns` the inspector calls, and nothing else. */
export type ChatReader = Readonly<Pick<ChatTurns, "listTurns" | "getTurn" | "storedChunks">>;

/** The read methods of `Tasks` the inspector calls, and nothing else. */
export type TasksReader = Readonly<
  Pick<Tasks, "list" | "history" | "countByState"> &
    Partial<Pick<Tasks, "journals" | "children" | "restarts" | "schedules">> & {
      /**
       * Resolves when a run's event stream (`tasks.events`, from the version that has one) moves
       * past where it stood when called, or when the run settled or went away; rejects when
       * `signal` aborts. What a live view of a run waits on instead of reading on a timer.
       */
      runChanged?: (runId: string, signal: AbortSignal) => Promise<void>;
    }
>;

/** The part of `tasks.events` a live view waits on. */
interface RunEventReads {
  status(runId: string): { cursor: number } | null;
  readBatches(
    runId: string,
    options: { from: number; signal: AbortSignal },
  ): AsyncIterable<unknown>;
}

/** A run's next event (or its end), over `tasks.events`: the `runChanged` of {@link TasksReader}. */
function runChanged(events: RunEventReads) {
  return async (runId: string, signal: AbortSignal): Promise<void> => {
    const from = events.status(runId)?.cursor;
    if (from === undefined) return;
    // The first batch from the cursor is the next event; a settled run's read ends at once.
    for await (const _ of events.readBatches(runId, { from, signal })) return;
  };
}

/** The read methods of rpc-bridge's `Executor` the inspector calls, and nothing else. */
export type ProgramsReader = Readonly<
  Pick<Executor, "get" | "calls"> & Partial<Pick<Executor, "list">>
>;

/** The parts an inspector reads, each narrowed to its read methods. */
export interface InspectedParts {
  tasks: TasksReader | null;
  programs: ProgramsReader | null;
  streams: StreamsReader | null;
  chat: ChatReader | null;
  subscriptions: SubscriptionsReader | null;
}

type Methods = Record<string, unknown>;

function has(part: Methods, names: readonly string[]): boolean {
  return names.every((name) => typeof part[name] === "function");
}

/**
 * A view of `part` that holds only the named methods, bound to it. The inspector keeps these and
 * never the part itself, so no write method is reachable from it: read-only by construction.
 */
function readView<T>(part: Methods, names: readonly string[]): T {
  const view: Methods = {};
  for (const name of names) {
    const method = part[name] as (...args: unknown[]) => unknown;
    view[name] = (...args: unknown[]) => method.apply(part, args);
  }
  return Object.freeze(view) as T;
}

const STREAMS_READS = ["list", "status", "readPage"] as const;
const CHAT_READS = ["listTurns", "getTurn", "storedChunks"] as const;
const SUBSCRIPTIONS_READS = ["list"] as const;
const TASKS_READS = ["list", "history", "countByState"] as const;
/**
 * Read where the part has it: `journals`, `children` and `restarts` by the run view (`Tasks` from
 * the versions with step journals, child runs and restarts), `schedules` by the overview.
 */
const TASKS_OPTIONAL_READS = ["journals", "children", "restarts", "schedules"] as const;
const PROGRAMS_READS = ["get", "calls"] as const;
/** Read where the part has it (`Executor` from the version that lists executions). */
const PROGRAMS_OPTIONAL_READS = ["list"] as const;

/**
 * Recognizes each part by its public methods (the packages are peers, never imported) and keeps a
 * read-only view of it. A part of no known kind, or a second part of one kind, is refused.
 *
 * @throws {InspectError} `inspect/invalid-argument`.
 */
export function inspectedParts(parts: unknown): InspectedParts {
  if (!Array.isArray(parts)) {
    throw new InspectError(
      "inspect/invalid-argument",
      "new Inspector(ctx, { parts }) takes the object's parts as an array, e.g. [this.streams, this.chat].",
    );
  }
  const found: InspectedParts = {
    tasks: null,
    programs: null,
    streams: null,
    chat: null,
    subscriptions: null,
  };
  parts.forEach((part: unknown, index) => {
    if (typeof part !== "object" || part === null) {
      throw new InspectError("inspect/invalid-argument", `parts[${index}] is not a part object.`);
    }
    const methods = part as Methods;
    let kind: keyof InspectedParts;
    if (has(methods, CHAT_READS) && has(methods, ["startTurn"])) kind = "chat";
    else if (has(methods, SUBSCRIPTIONS_READS) && has(methods, ["streamChanged", "jwks"])) {
      kind = "subscriptions";
    } else if (has(methods, TASKS_READS) && has(methods, ["run", "sendEvent"])) kind = "tasks";
    else if (has(methods, PROGRAMS_READS) && has(methods, ["execute", "resume"])) kind = "programs";
    else if (has(methods, STREAMS_READS) && has(methods, ["open", "write"])) kind = "streams";
    else {
      throw new InspectError(
        "inspect/invalid-argument",
        `parts[${index}] is not a part the inspector reads: pass the object's Tasks, Executor, Streams, ChatTurns or DurableStreamsSubscriptions (constructed before the Inspector).`,
      );
    }
    if (found[kind] !== null) {
      throw new InspectError(
        "inspect/invalid-argument",
        `parts[${index}] is a second ${kind} part; an object has one of each.`,
      );
    }
    if (kind === "chat") found.chat = readView<ChatReader>(methods, CHAT_READS);
    else if (kind === "subscriptions") {
      found.subscriptions = readView<SubscriptionsReader>(methods, SUBSCRIPTIONS_READS);
    } else if (kind === "tasks") {
      const optional = TASKS_OPTIONAL_READS.filter((name) => typeof methods[name] === "function");
      const view = readView<TasksReader>(methods, [...TASKS_READS, ...optional]);
      const events = methods.events as Methods | undefined;
      found.tasks =
        typeof events === "object" &&
        events !== null &&
        typeof events.status === "function" &&
        typeof events.readBatches === "function"
          ? Object.freeze({ ...view, runChanged: runChanged(events as unknown as RunEventReads) })
          : view;
    } else if (kind === "programs") {
      const optional = PROGRAMS_OPTIONAL_READS.filter(
        (name) => typeof methods[name] === "function",
      );
      found.programs = readView<ProgramsReader>(methods, [...PROGRAMS_READS, ...optional]);
    } else found.streams = readView<StreamsReader>(methods, STREAMS_READS);
  });
  return found;
}
