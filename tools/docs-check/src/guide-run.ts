import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Guide, type ShellBlock, STATUS_COMMENT } from "./guide.ts";

/** The base URL the guides write: `base=http://127.0.0.1:8787`. */
export const DOCS_BASE_URL = "http://127.0.0.1:8787";

/** Options of a {@link GuideRun}. */
export interface GuideRunOptions {
  /** The base URL of the server under test; replaces {@link DOCS_BASE_URL} in every block. */
  baseUrl: string;
  /** The whole guide's wall-clock budget; the run is killed when it is over. */
  timeoutMs: number;
}

/** How one guide's examples ended. */
export type GuideOutcome =
  | {
      readonly ok: true;
      readonly guide: string;
      readonly blocks: number;
      readonly ms: number;
      /** What the blocks printed. */
      readonly output: string;
    }
  | {
      readonly ok: false;
      readonly guide: string;
      readonly blocks: number;
      readonly ms: number;
      /** Names the guide, block, line and command, and what went wrong; ends with the output's tail. */
      readonly message: string;
    };

/** Where a line of the generated script came from. */
interface Origin {
  readonly block: ShellBlock;
  readonly docLine: number;
}

/** What the run puts before the guide's blocks: strict mode, the curl wrapper, the reporters. */
const PRELUDE = readFileSync(new URL("./prelude.sh", import.meta.url), "utf8");

// ── GuideRun ──

/**
 * Runs a guide's ```sh blocks in order, in one bash, as a reader pasting them would: variables set
 * in one block are there in the next. Bash runs with `-Eeuo pipefail`, so the first command that
 * fails (or reads an unset variable) stops the guide. A line ending in `# → 202` must get that HTTP
 * status from the request it makes (every `curl` records its response headers). The run is killed
 * when it outlives its budget.
 */
export class GuideRun {
  readonly #guide: Guide;
  readonly #options: GuideRunOptions;
  /** Script line (1-based) → the block and guide line it came from; prelude lines have none. */
  readonly #origins = new Map<number, Origin>();
  /** Guide line of a command's last line → the whole command as the guide wrote it. */
  readonly #commands = new Map<number, string>();
  readonly #script: string;

  constructor(guide: Guide, options: GuideRunOptions) {
    this.#guide = guide;
    this.#options = options;
    this.#script = this.#compose();
  }

  /** The generated bash script (for inspection). */
  get script(): string {
    return this.#script;
  }

  /** Runs the script in a fresh temporary directory and says how it ended. */
  async run(): Promise<GuideOutcome> {
    const dir = mkdtempSync(join(tmpdir(), "dk-docs-"));
    const report = join(dir, ".report");
    writeFileSync(report, "");
    writeFileSync(join(dir, ".guide.sh"), this.#script);
    const started = Date.now();
    try {
      const { code, output, timedOut } = await this.#spawn(dir, report);
      const ms = Date.now() - started;
      const guide = this.#guide.name;
      const blocks = this.#guide.runnable.length;
      if (code === 0 && !timedOut) return { ok: true, guide, blocks, ms, output };
      const why = timedOut
        ? `${guide} did not finish within ${this.#options.timeoutMs} ms${this.#lastStarted(output)}`
        : this.#explain(readFileSync(report, "utf8"), code);
      return {
        ok: false,
        guide,
        blocks,
        ms,
        message: `${why}\n--- output (tail) ---\n${tail(output, 40)}`,
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  #compose(): string {
    const out = PRELUDE.split("\n");
    out.pop(); // the trailing newline's empty line
    for (const block of this.#guide.runnable) {
      out.push(
        `printf '\\n## %s block %d (line %d)\\n' ${quote(this.#guide.name)} ${block.index} ${block.line}`,
      );
      // Lines of the command being read: a line ending in a backslash continues onto the next.
      let command: { docLine: number; text: string }[] = [];
      for (const [offset, text] of block.lines.entries()) {
        command.push({ docLine: block.line + offset, text });
        if (text.trimEnd().endsWith("\\")) continue;
        const status = STATUS_COMMENT.exec(text);
        // The status check resets where curl records headers before the command, and reads it after.
        if (status) out.push(`__dk_hdr="$DK_DIR/.status"; : >"$__dk_hdr"`);
        for (const line of command) {
          out.push(line.text.replaceAll(DOCS_BASE_URL, this.#options.baseUrl));
          this.#origins.set(out.length, { block, docLine: line.docLine });
        }
        if (status) out.push(`__dk_status ${status[1]} ${block.line + offset}`);
        this.#commands.set(
          block.line + offset,
          command.map((line) => line.text.trim()).join("\n    "),
        );
        command = [];
      }
      for (const line of command) out.push(line.text);
    }
    return `${out.join("\n")}\n`;
  }

  #spawn(
    dir: string,
    report: string,
  ): Promise<{ code: number | null; output: string; timedOut: boolean }> {
    return new Promise((resolve) => {
      const child = spawn("bash", [".guide.sh"], {
        cwd: dir,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, DK_REPORT: report, DK_DIR: dir, NO_COLOR: "1" },
      });
      let output = "";
      const collect = (chunk: Buffer) => {
        output += chunk.toString();
      };
      child.stdout.on("data", collect);
      child.stderr.on("data", collect);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        signalGroup(child.pid, "SIGKILL");
      }, this.#options.timeoutMs);
      child.once("close", (code) => {
        clearTimeout(timer);
        // Background jobs a guide started (a subscriber) end with the guide.
        signalGroup(child.pid, "SIGKILL");
        resolve({ code, output, timedOut });
      });
    });
  }

  /** What the report file says went wrong, as a sentence naming the guide, block, line and command. */
  #explain(report: string, code: number | null): string {
    const records = report
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split("\t"));
    const status = records.find((record) => record[0] === "status");
    if (status) {
      const [, expected, docLine, got] = status;
      const origin = this.#byDocLine(Number(docLine));
      return `${this.#where(origin)}: expected HTTP ${expected}, got ${got}\n  $ ${origin?.command ?? ""}`;
    }
    // The outermost failure is the command as the guide wrote it (a command substitution's own
    // failure is reported from inside the subshell first).
    const failure = records
      .filter((record) => record[0] === "command")
      .sort((a, b) => Number(a[3]) - Number(b[3]))[0];
    if (failure) {
      const [, exit, scriptLine, , command] = failure;
      const origin = this.#origins.get(Number(scriptLine));
      const at = origin ? this.#byDocLine(origin.docLine) : null;
      // bash names the failing function's last command (`return $?` of the curl wrapper): show the
      // guide's own command where the line is known.
      return `${this.#where(at)}: exited ${exit}\n  $ ${at?.command || command}`;
    }
    return `${this.#guide.name}: bash exited ${code} with no failing command recorded`;
  }

  #byDocLine(docLine: number): (Origin & { command: string }) | null {
    for (const origin of this.#origins.values()) {
      if (origin.docLine !== docLine) continue;
      return { ...origin, command: this.#commands.get(docLine) ?? "" };
    }
    return null;
  }

  #where(origin: Origin | null): string {
    if (!origin) return this.#guide.name;
    return `${this.#guide.name}, block ${origin.block.index} (line ${origin.docLine})`;
  }

  #lastStarted(output: string): string {
    const marks = [...output.matchAll(/^## .+ block (\d+) \(line (\d+)\)$/gm)];
    const last = marks.at(-1);
    return last ? `; it was in block ${last[1]} (line ${last[2]})` : "";
  }
}

function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // The group is already gone.
  }
}

function quote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

function tail(text: string, lines: number): string {
  return text.split("\n").slice(-lines).join("\n");
}
