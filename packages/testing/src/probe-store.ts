import { migrateSchema } from "@durablekit/compose";
import { TestingError } from "./errors";
import { realNow } from "./handler-clock";

/** The schema version of the `dk_testing_*` tables this code reads and writes. */
export const TESTING_SCHEMA_VERSION = 3;

/** What a durable boundary of a run is: the write it stands for. */
export type TestingBoundaryKind = "do" | "sleep" | "event" | "version" | "journal" | "settle";

/** Where a crash lands relative to a boundary's write. */
export type TestingCrashPosition = "before" | "after";

/** One durable boundary a run passed live, in the order it first passed them. */
export interface TestingBoundary {
  /** 0-based, in the order the run first passed its boundaries. */
  index: number;
  kind: TestingBoundaryKind;
  /** The step's (or marker's) name; `null` for the run's settle. */
  name: string | null;
  /**
   * `do:<name>`, `sleep:<name>`, `event:<name>`, `version:<name>`, `settle`, or for a call a
   * program recorded in a step journal, `journal:<journal>:<key>` (its name is `<journal>:<key>`;
   * `journal:<journal>:<key>:resolve` for the write that settles a pending entry).
   */
  label: string;
  /** For a `do` step: its callback returned a promise (its body can be cut before its result is written). */
  async: boolean;
  /** For a `journal` boundary: the host call it records, `module.method`; otherwise `null`. */
  call: string | null;
}

/** How often a step's body ran in an object, as the probe counted it. */
export interface TestingStepBodies {
  step: string;
  /** Times the body started. */
  runs: number;
  /** Times it started after its result had reached the handler (never, for a correct engine). */
  runsAfterRecorded: number;
}

/** The crash a probe is armed for. */
export interface ProbeArm {
  label: string;
  position: TestingCrashPosition;
  async: boolean;
}

const MIGRATIONS: ReadonlyArray<readonly string[]> = [
  [
    // One row per setting: the clock's offset, the armed crash, whether it fired.
    "CREATE TABLE dk_testing_settings (name TEXT NOT NULL PRIMARY KEY, value) WITHOUT ROWID",
    `CREATE TABLE dk_testing_boundaries (
      run_id TEXT NOT NULL, label TEXT NOT NULL, seq INTEGER NOT NULL,
      kind TEXT NOT NULL, name TEXT, async INTEGER NOT NULL,
      PRIMARY KEY (run_id, label)
    ) WITHOUT ROWID`,
    `CREATE TABLE dk_testing_bodies (
      run_id TEXT NOT NULL, step TEXT NOT NULL, runs INTEGER NOT NULL,
      runs_after_recorded INTEGER NOT NULL, recorded INTEGER NOT NULL,
      PRIMARY KEY (run_id, step)
    ) WITHOUT ROWID`,
  ],
  // v2: the host call of a journal boundary.
  ["ALTER TABLE dk_testing_boundaries ADD COLUMN call TEXT"],
  // v3: child runs — the messages the object received and the objects its runs started children in.
  [
    `CREATE TABLE dk_testing_messages (
      label TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL, kind TEXT NOT NULL,
      key TEXT, run_id TEXT
    ) WITHOUT ROWID`,
    "CREATE TABLE dk_testing_targets (target TEXT NOT NULL PRIMARY KEY, seq INTEGER NOT NULL) WITHOUT ROWID",
  ],
];

/** A child-run message an object received, as the probe labelled it. */
export interface ProbeMessage {
  /** `start:<step>#<index>`, `settled:<step>#<index>` or `cancel:<step>#<index>` (the parent's step). */
  label: string;
  kind: string;
  /** For a start: the child run it started or joined (null until it was answered). */
  runId: string | null;
}

/**
 * The SQL of the `dk_testing_*` tables: the test clock, the armed crash and what the probe saw.
 * The probe inside the object and the test's helpers (through `runInDurableObject`) each open one
 * over the same storage; nothing is cached, so both always see the rows.
 */
export class ProbeStore {
  readonly #sql: SqlStorage;

  constructor(storage: DurableObjectStorage) {
    migrateSchema(storage, {
      table: "testing",
      steps: MIGRATIONS,
      packageName: "@durablekit/testing",
      tooNew: (message) => new TestingError("testing/schema-too-new", message),
    });
    this.#sql = storage.sql;
  }

  // ── Settings ──

  #get(name: string): SqlStorageValue | undefined {
    return this.#sql
      .exec<{ value: SqlStorageValue }>(
        "SELECT value FROM dk_testing_settings WHERE name = ?",
        name,
      )
      .toArray()[0]?.value;
  }

  #set(name: string, value: SqlStorageValue): void {
    this.#sql.exec(
      "INSERT INTO dk_testing_settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      name,
      value,
    );
  }

  /** How far the test clock is ahead of real time, in milliseconds. */
  offset(): number {
    return (this.#get("clock_offset") as number | undefined) ?? 0;
  }

  /** Moves the test clock to `at` (never backwards: a clock that runs back breaks every deadline). */
  moveTo(at: number): void {
    const offset = Math.max(this.offset(), Math.ceil(at - realNow()));
    this.#set("clock_offset", offset);
  }

  /** The test clock: real time (never the scope's own `Date.now()`) plus the offset. */
  now(): number {
    return realNow() + this.offset();
  }

  arm(arm: ProbeArm): void {
    this.#set("crash", JSON.stringify(arm));
    this.#set("crash_hit", 0);
  }

  armed(): ProbeArm | null {
    const text = this.#get("crash");
    if (typeof text !== "string" || this.#get("crash_hit") === 1) return null;
    return JSON.parse(text) as ProbeArm;
  }

  markHit(): void {
    this.#set("crash_hit", 1);
  }

  hit(): boolean {
    return this.#get("crash_hit") === 1;
  }

  // ── What the probe saw ──

  /** Records a boundary the first time a run passes it (`call`: a journal boundary's host call). */
  boundary(
    runId: string,
    kind: TestingBoundaryKind,
    name: string | null,
    async: boolean,
    call: string | null = null,
  ): void {
    const label = name === null ? kind : `${kind}:${name}`;
    this.#sql.exec(
      `INSERT INTO dk_testing_boundaries (run_id, label, seq, kind, name, async, call)
       SELECT ?1, ?2, (SELECT count(*) FROM dk_testing_boundaries WHERE run_id = ?1), ?3, ?4, ?5, ?6
       ON CONFLICT (run_id, label) DO NOTHING`,
      runId,
      label,
      kind,
      name,
      async ? 1 : 0,
      call,
    );
  }

  boundaries(runId: string): TestingBoundary[] {
    return this.#sql
      .exec<{
        label: string;
        seq: number;
        kind: string;
        name: string | null;
        async: number;
        call: string | null;
      }>(
        "SELECT label, seq, kind, name, async, call FROM dk_testing_boundaries WHERE run_id = ? ORDER BY seq",
        runId,
      )
      .toArray()
      .map((row) => ({
        index: row.seq,
        kind: row.kind as TestingBoundaryKind,
        name: row.name,
        label: row.label,
        async: row.async === 1,
        call: row.call,
      }));
  }

  /** Counts one start of a step's body (in the turn it starts, so it commits with what the body does). */
  bodyStarted(runId: string, step: string): void {
    this.#sql.exec(
      `INSERT INTO dk_testing_bodies (run_id, step, runs, runs_after_recorded, recorded)
       VALUES (?, ?, 1, 0, 0)
       ON CONFLICT (run_id, step) DO UPDATE SET runs = runs + 1,
         runs_after_recorded = runs_after_recorded + recorded`,
      runId,
      step,
    );
  }

  /** Marks a step whose result reached the handler (written in the turn the engine wrote its row). */
  stepRecorded(runId: string, step: string): void {
    this.#sql.exec(
      `INSERT INTO dk_testing_bodies (run_id, step, runs, runs_after_recorded, recorded)
       VALUES (?, ?, 0, 0, 1)
       ON CONFLICT (run_id, step) DO UPDATE SET recorded = 1`,
      runId,
      step,
    );
  }

  // ── Child runs ──

  /** Notes a child-run message the object received (its exchange's key, to label a later cancel). */
  message(label: string, kind: string, key: string | null): void {
    this.#sql.exec(
      `INSERT INTO dk_testing_messages (label, seq, kind, key, run_id)
       SELECT ?1, (SELECT count(*) FROM dk_testing_messages), ?2, ?3, NULL
       ON CONFLICT (label) DO NOTHING`,
      label,
      kind,
      key,
    );
  }

  /** Notes the child run a start was answered with. */
  started(label: string, runId: string): void {
    this.#sql.exec("UPDATE dk_testing_messages SET run_id = ? WHERE label = ?", runId, label);
  }

  /** The start label of the exchange `key` (null when no start of it arrived here). */
  startOf(key: string): string | null {
    return (
      this.#sql
        .exec<{ label: string }>(
          "SELECT label FROM dk_testing_messages WHERE key = ? AND kind = 'start'",
          key,
        )
        .toArray()[0]?.label ?? null
    );
  }

  messages(): ProbeMessage[] {
    return this.#sql
      .exec<{ label: string; kind: string; run_id: string | null }>(
        "SELECT label, kind, run_id FROM dk_testing_messages ORDER BY seq",
      )
      .toArray()
      .map((row) => ({ label: row.label, kind: row.kind, runId: row.run_id }));
  }

  /** Notes an object a run of this one started a child in (`{ binding, name }` or `{ binding, id }` as JSON). */
  target(target: string): void {
    this.#sql.exec(
      `INSERT INTO dk_testing_targets (target, seq)
       SELECT ?1, (SELECT count(*) FROM dk_testing_targets) ON CONFLICT (target) DO NOTHING`,
      target,
    );
  }

  targets(): string[] {
    return this.#sql
      .exec<{ target: string }>("SELECT target FROM dk_testing_targets ORDER BY seq")
      .toArray()
      .map((row) => row.target);
  }

  /** Every step body the object's runs ran (`runId` null: all its runs, summed by step). */
  bodies(runId: string | null): TestingStepBodies[] {
    if (runId === null) {
      return this.#sql
        .exec<{ step: string; runs: number; after: number }>(
          "SELECT step, sum(runs) AS runs, sum(runs_after_recorded) AS after FROM dk_testing_bodies GROUP BY step",
        )
        .toArray()
        .map((row) => ({ step: row.step, runs: row.runs, runsAfterRecorded: row.after }));
    }
    return this.#bodiesOf(runId);
  }

  #bodiesOf(runId: string): TestingStepBodies[] {
    return this.#sql
      .exec<{ step: string; runs: number; after: number }>(
        "SELECT step, runs, runs_after_recorded AS after FROM dk_testing_bodies WHERE run_id = ?",
        runId,
      )
      .toArray()
      .map((row) => ({ step: row.step, runs: row.runs, runsAfterRecorded: row.after }));
  }
}
