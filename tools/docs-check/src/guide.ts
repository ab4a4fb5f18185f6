import { readFileSync } from "node:fs";
import { basename } from "node:path";

/** One fenced ```sh block of a guide. */
export interface ShellBlock {
  /** 1-based position among the guide's ```sh blocks. */
  readonly index: number;
  /** 1-based line of the block's first command in the guide. */
  readonly line: number;
  /** The block's lines, without the fences. */
  readonly lines: readonly string[];
  /** False for a block marked ```sh no-run (install and deploy commands). */
  readonly runs: boolean;
}

/** A fenced block whose info string names the repository file it shows: ```ts file=path/to/file.ts. */
export interface FileBlock {
  /** The file's path from the repository root. */
  readonly file: string;
  /** 1-based line of the block's first line in the guide. */
  readonly line: number;
  /** The block's text, each line ending in a newline. */
  readonly text: string;
}

/**
 * One fenced TypeScript block (```ts, ```typescript, ```tsx) that does not name a repository file:
 * the snippet check compiles it as pasted.
 */
export interface CodeBlock {
  /** 1-based line of the block's first line in the guide. */
  readonly line: number;
  /** The block's text, each line ending in a newline. */
  readonly text: string;
  /** True for a block marked ```ts partial (class members, a fragment of a function). */
  readonly partial: boolean;
}

/** The info string that keeps a shell block out of the run: ```sh no-run. */
export const NO_RUN = "no-run";

/** The info string that keeps a TypeScript block out of the snippet check: ```ts partial. */
export const PARTIAL = "partial";

/** A trailing comment stating the HTTP status the line's request answers: `# → 202`. */
export const STATUS_COMMENT = /#\s*→\s*(\d{3})\s*$/;

// ── Guide ──

/** A Markdown guide and its shell examples, in document order. */
export class Guide {
  readonly path: string;
  /** How test titles and failures name the guide: its file name unless the reader gave one. */
  readonly name: string;
  readonly blocks: readonly ShellBlock[];
  readonly files: readonly FileBlock[];
  /** The TypeScript blocks that do not name a file (those are checked against the file itself). */
  readonly snippets: readonly CodeBlock[];

  constructor(path: string, markdown: string, name: string = basename(path)) {
    this.path = path;
    this.name = name;
    const blocks: ShellBlock[] = [];
    const files: FileBlock[] = [];
    const snippets: CodeBlock[] = [];
    for (const fenced of Guide.#fencedBlocks(markdown)) {
      const [language, ...flags] = fenced.info;
      const file = flags.find((flag) => flag.startsWith("file="))?.slice("file=".length);
      if (file)
        files.push({
          file,
          line: fenced.line,
          text: fenced.body.map((line) => `${line}\n`).join(""),
        });
      else if (language === "ts" || language === "typescript" || language === "tsx")
        snippets.push({
          line: fenced.line,
          text: fenced.body.map((line) => `${line}\n`).join(""),
          partial: flags.includes(PARTIAL),
        });
      if (language === "sh" || language === "bash" || language === "shell") {
        blocks.push({
          index: blocks.length + 1,
          line: fenced.line,
          lines: fenced.body,
          runs: !flags.includes(NO_RUN),
        });
      }
    }
    this.blocks = blocks;
    this.files = files;
    this.snippets = snippets;
  }

  /** Reads and parses the guide at `path`, named `name` (default: its file name). */
  static read(path: string, name?: string): Guide {
    return new Guide(path, readFileSync(path, "utf8"), name);
  }

  /** The blocks the docs test runs (every ```sh block not marked `no-run`). */
  get runnable(): ShellBlock[] {
    return this.blocks.filter((block) => block.runs);
  }

  static #fencedBlocks(markdown: string): { info: string[]; line: number; body: string[] }[] {
    const blocks: { info: string[]; line: number; body: string[] }[] = [];
    let open: { fence: string; info: string[]; line: number; body: string[] } | null = null;
    for (const [i, text] of markdown.split("\n").entries()) {
      if (open === null) {
        const start = /^\s*(`{3,}|~{3,})\s*(.*)$/.exec(text);
        if (start)
          open = {
            fence: start[1] ?? "```",
            info: (start[2] ?? "").split(/\s+/),
            line: i + 2,
            body: [],
          };
        continue;
      }
      // A fence closes with at least as many of the same character, and nothing else.
      const trimmed = text.trim();
      if (trimmed.startsWith(open.fence) && /^(`+|~+)$/.test(trimmed)) {
        blocks.push({ info: open.info, line: open.line, body: open.body });
        open = null;
        continue;
      }
      open.body.push(text);
    }
    return blocks;
  }
}
