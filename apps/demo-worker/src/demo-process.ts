import { RpcTarget } from "cloudflare:workers";
import { handle } from "@durablekit/handle-journal";
import {
  type BridgeCallContext,
  type BridgeHostModule,
  hostModule,
  readOnlyMethods,
} from "@durablekit/rpc-bridge";
import type { HostCounters } from "./host-counters";
import { hostTypeError, revivedId } from "./host-errors";

/** How many UTF-8 bytes one `read()` returns at most, unless `maxBytes` says less. */
export const DEFAULT_READ_BYTES = 4_096;
/** The most one `read()` may ask for. */
export const MAX_READ_BYTES = 65_536;
/** The longest command line. */
const MAX_COMMAND_LENGTH = 1_000;
/**
 * The most lines `seq` prints (at most about 50 KB of output, stored once per spawn: a program's
 * `maxCalls` spawns stay within tens of megabytes).
 */
const MAX_SEQ_LINES = 10_000;

/** A process as stored. */
interface ProcessRow {
  id: string;
  executionId: string;
  output: string;
  exitCode: number;
}

/** What one `read()` returns: the next chunk of output and whether the output is used up. */
export interface ProcessChunk {
  chunk: string;
  done: boolean;
}

/**
 * The output and exit code of a demo command: `echo <words>` and `seq [first] <last>` (at most
 * 10,000 lines); anything else exits 127. The demo runs no real processes: a command's output is
 * computed when it is spawned and read back in bounded chunks.
 */
function runCommand(command: string): { output: string; exitCode: number } {
  const [name = "", ...args] = command.trim().split(/\s+/);
  if (name === "echo") return { output: `${args.join(" ")}\n`, exitCode: 0 };
  if (name === "seq") {
    const numbers = args.map(Number);
    const first = numbers.length === 2 ? numbers[0] : 1;
    const last = numbers.at(-1);
    if (
      numbers.length < 1 ||
      numbers.length > 2 ||
      !Number.isInteger(first) ||
      !Number.isInteger(last) ||
      (last as number) - (first as number) >= MAX_SEQ_LINES
    ) {
      return {
        output: `seq: takes [first] last, integers, at most ${MAX_SEQ_LINES} lines\n`,
        exitCode: 1,
      };
    }
    const lines: string[] = [];
    for (let i = first as number; i <= (last as number); i++) lines.push(`${i}\n`);
    return { output: lines.join(""), exitCode: 0 };
  }
  return { output: `${name}: command not found (the demo runs echo and seq)\n`, exitCode: 127 };
}

/**
 * The demo's processes, in its object's SQLite (`demo_processes`, `demo_process_reads`; tables made
 * by `DemoHostModules`). Reads are keyed by the bridge call's `callId`: a read that runs again (its
 * answer was lost with the object before it was journaled) returns the same chunk, so each byte of
 * output reaches the program once, in order.
 */
export class ProcessStore {
  readonly #storage: DurableObjectStorage;
  readonly counters: HostCounters;
  readonly #encoder = new TextEncoder();

  constructor(storage: DurableObjectStorage, counters: HostCounters) {
    this.#storage = storage;
    this.counters = counters;
  }

  /** Spawns process `id` (once: a repeated id is the same process) and returns it. */
  spawn(executionId: string, id: string, command: string): Process {
    const { output, exitCode } = runCommand(command);
    const written = this.#storage.sql.exec(
      "INSERT INTO demo_processes (id, execution_id, command, output, exit_code, cursor) VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT (id) DO NOTHING",
      id,
      executionId,
      command,
      output,
      exitCode,
    ).rowsWritten;
    if (written > 0) this.counters.bump(executionId, "spawns");
    return new Process(this, this.#row(id) as ProcessRow);
  }

  /**
   * A Process for a stored process, revived by a replay (`[handle.revive]`).
   * @throws TypeError `E_PROCESS_NOT_FOUND` when no process has that id.
   */
  revive(id: string): Process {
    const row = this.#row(id);
    if (row === null) throw hostTypeError(`No process "${id}" exists.`, "E_PROCESS_NOT_FOUND");
    return new Process(this, row);
  }

  #row(id: string): ProcessRow | null {
    const row = this.#storage.sql
      .exec<{ execution_id: string; output: string; exit_code: number }>(
        "SELECT execution_id, output, exit_code FROM demo_processes WHERE id = ?",
        id,
      )
      .toArray()[0];
    return row === undefined
      ? null
      : { id, executionId: row.execution_id, output: row.output, exitCode: row.exit_code };
  }

  /**
   * The chunk read `callId` takes: the one it took before, or the next at most `maxBytes` UTF-8
   * bytes of output (never splitting a character), the cursor moved past it in the same transaction.
   */
  read(process: ProcessRow, callId: string, maxBytes: number): ProcessChunk {
    return this.#storage.transactionSync(() => {
      const sql = this.#storage.sql;
      const taken = sql
        .exec<{ start: number; end: number }>(
          "SELECT start, end FROM demo_process_reads WHERE call_id = ?",
          callId,
        )
        .toArray()[0];
      let range = taken;
      if (range === undefined) {
        const { cursor } = sql
          .exec<{ cursor: number }>("SELECT cursor FROM demo_processes WHERE id = ?", process.id)
          .one();
        const rest = process.output.slice(cursor);
        const { read } = this.#encoder.encodeInto(rest, new Uint8Array(maxBytes));
        range = { start: cursor, end: cursor + (read ?? 0) };
        sql.exec(
          "INSERT INTO demo_process_reads (call_id, process_id, start, end) VALUES (?, ?, ?, ?)",
          callId,
          process.id,
          range.start,
          range.end,
        );
        sql.exec("UPDATE demo_processes SET cursor = ? WHERE id = ?", range.end, process.id);
        this.counters.bump(process.executionId, "reads");
      }
      return {
        chunk: process.output.slice(range.start, range.end),
        done: range.end >= process.output.length,
      };
    });
  }
}

/**
 * A spawned process: `read()` returns its output in bounded chunks, `wait()` its exit code. Both
 * are read-only. Replayable (`{ id }`): its reads are ordinary journaled calls, the replay-safe way
 * to read output, where a ReadableStream could not be journaled.
 */
export class Process extends RpcTarget {
  static readonly [handle.kind] = "Process";
  readonly #processes: ProcessStore;
  readonly #row: ProcessRow;

  constructor(processes: ProcessStore, row: ProcessRow) {
    super();
    this.#processes = processes;
    this.#row = row;
  }

  /** The next chunk of output: at most `maxBytes` (1–65536, default 4096) UTF-8 bytes; `done` once it is all read. */
  read([options]: [{ maxBytes?: unknown } | undefined], ctx: BridgeCallContext): ProcessChunk {
    const maxBytes = options?.maxBytes ?? DEFAULT_READ_BYTES;
    if (
      !Number.isInteger(maxBytes) ||
      (maxBytes as number) < 1 ||
      (maxBytes as number) > MAX_READ_BYTES
    ) {
      throw hostTypeError(
        `read takes { maxBytes?: 1–${MAX_READ_BYTES} } (an integer, default ${DEFAULT_READ_BYTES}).`,
        "E_PROCESS_OPTIONS",
      );
    }
    return this.#processes.read(this.#row, ctx.callId, maxBytes as number);
  }

  /** `{ exitCode }` (a demo command has ended by the time it is spawned). */
  wait(): { exitCode: number } {
    return { exitCode: this.#row.exitCode };
  }

  [handle.serialize](): { id: string } {
    return { id: this.#row.id };
  }
}

readOnlyMethods(Process, "read", "wait");

/**
 * The `codemode:process` host module: `spawn(command)` → `Process` with `read({ maxBytes })` and
 * `wait()`. The process id comes from the call's `callId`, so a restarted program gets the same
 * process back.
 */
export function processModule(processes: ProcessStore): BridgeHostModule {
  return hostModule(
    {
      spawn: ([command]: [unknown], ctx: BridgeCallContext): Process => {
        if (
          typeof command !== "string" ||
          command.trim().length === 0 ||
          command.length > MAX_COMMAND_LENGTH
        ) {
          throw hostTypeError(
            `spawn takes a command line (a string of 1–${MAX_COMMAND_LENGTH} characters), e.g. "seq 100".`,
            "E_PROCESS_COMMAND",
          );
        }
        return processes.spawn(ctx.executionId, `process:${ctx.callId}`, command);
      },
      [handle.revive]: {
        Process: (value: unknown) => processes.revive(revivedId(value, "Process")),
      },
    },
    {
      description:
        "Run demo commands (echo, seq) and read their output in bounded chunks, replay-safely.",
      exports: { spawn: "(command: string): Promise<Process>" },
      classes: {
        Process: {
          class: Process,
          description: "A spawned command.",
          methods: {
            read: "(options?: { maxBytes?: number }): Promise<{ chunk: string; done: boolean }>",
            wait: "(): Promise<{ exitCode: number }>",
          },
        },
      },
    },
  );
}
