import { migrateSchema } from "@durablekit/compose";
import { TasksError } from "../errors";

/**
 * The tables this package owns, and their forward-only migrations. Every table is prefixed
 * `dk_tasks_`; `dk_tasks_meta (name, value)` holds the schema version row (`schema_version`), as
 * every durablekit package does (docs/composing.md, "Schema").
 *
 * Row-write costs are part of the design (see DESIGN.md): the step journal, the call journals and
 * the event buffer are WITHOUT ROWID tables keyed by their natural key and carry no secondary index, so inserting
 * or updating one journal row writes exactly one b-tree row. The run table's indexes are only
 * touched when a run is accepted, claimed, parked or settled — never per step.
 */

/** The schema version this code reads and writes (the number of migration steps). */
export const TASKS_SCHEMA_VERSION = 12;

/*
 * Statements shared by the migration that first made a table and by {@link CURRENT}, which makes
 * the current schema on a new object. A migration never changes once released: change a table in
 * a new step (and in CURRENT), never here.
 */

/** The columns of `dk_tasks_runs` as v1 made them (later steps add columns after them). */
const RUNS_COLUMNS_V1 = `      run_id TEXT NOT NULL PRIMARY KEY,
      definition TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled')),
      input TEXT NOT NULL,
      metadata TEXT,
      idempotency_key TEXT,
      retain INTEGER NOT NULL,
      attempt INTEGER NOT NULL DEFAULT 0,
      generation TEXT,
      next_at INTEGER,
      wait_reason TEXT CHECK (wait_reason IN ('sleep', 'retry', 'event')),
      wait_step TEXT,
      wait_event TEXT,
      status_message TEXT,
      result TEXT,
      error TEXT,
      cancel_requested INTEGER NOT NULL DEFAULT 0,
      cancel_reason TEXT,
      created_at INTEGER NOT NULL,
      started_at INTEGER,
      updated_at INTEGER NOT NULL,
      settled_at INTEGER`;

/**
 * `dk_tasks_runs` as v9 makes it: the v1 columns and those v2 and v4 added, the state check
 * admitting `paused` (a run an operator holds) and `queued` (a run flow control holds),
 * `pause_requested` (a pause asked of a live attempt, taken at its next step boundary) and
 * `deadline_at` (when the run fails with `tasks/run-timeout`, from `run(…, { deadlineMs })`). SQLite
 * cannot change a check in place, so v9 copies the table; after its rename SQLite keeps the
 * name quoted, as written here.
 */
const RUNS_TABLE_V9 = (name: string) => `CREATE TABLE ${name} (
${RUNS_COLUMNS_V1.replace(
  "state IN ('pending', 'running', 'waiting', 'completed', 'failed', 'cancelled')",
  "state IN ('queued', 'pending', 'running', 'waiting', 'paused', 'completed', 'failed', 'cancelled')",
)},
      progress INTEGER NOT NULL DEFAULT 0,
      stalls INTEGER NOT NULL DEFAULT 0,
      attempt_started_at INTEGER,
      trace TEXT,
      pause_requested INTEGER NOT NULL DEFAULT 0,
      deadline_at INTEGER
    ) WITHOUT ROWID`;

/** The columns v11 adds to `dk_tasks_runs` (flow control), as `ALTER TABLE` adds them. */
const RUNS_FLOW_COLUMNS = [
  "flow_key TEXT",
  "priority INTEGER NOT NULL DEFAULT 0",
  "queue_seq INTEGER",
  "queued_for TEXT",
];

/** `dk_tasks_runs` as a new object makes it: v9's table and the columns v10 and v11 add. */
const RUNS_TABLE_CURRENT = RUNS_TABLE_V9('"dk_tasks_runs"').replace(
  "deadline_at INTEGER\n",
  `deadline_at INTEGER,\n      compensable INTEGER NOT NULL DEFAULT 0, ${RUNS_FLOW_COLUMNS.join(", ")}\n`,
);

/** Every column v8 had, in order: what v9 copies. */
const RUNS_COLUMNS_V8 = `run_id, definition, state, input, metadata, idempotency_key, retain, attempt,
  generation, next_at, wait_reason, wait_step, wait_event, status_message, result, error,
  cancel_requested, cancel_reason, created_at, started_at, updated_at, settled_at, progress, stalls,
  attempt_started_at, trace`;

/** The restarts of each run (v9): one row per `restart(runId, { from })`, with what it replaced. */
const RESTARTS_TABLE = `CREATE TABLE dk_tasks_restarts (
      run_id TEXT NOT NULL,
      restart INTEGER NOT NULL,
      from_step TEXT NOT NULL,
      at INTEGER NOT NULL,
      attempt INTEGER NOT NULL,
      state TEXT NOT NULL,
      PRIMARY KEY (run_id, restart)
    ) WITHOUT ROWID`;

/** The journal rows each restart dropped (v9), kept as the run's history until it is deleted. */
const DROPPED_STEPS_TABLE = `CREATE TABLE dk_tasks_dropped_steps (
      run_id TEXT NOT NULL,
      restart INTEGER NOT NULL,
      name TEXT NOT NULL,
      seq INTEGER NOT NULL,
      kind TEXT NOT NULL,
      state TEXT NOT NULL,
      attempt INTEGER NOT NULL,
      value TEXT,
      wake_at INTEGER,
      event_type TEXT,
      at INTEGER NOT NULL,
      PRIMARY KEY (run_id, restart, name)
    ) WITHOUT ROWID`;

/**
 * A run's lifecycle log (v10): one row per transition that is not a step's (accepted, an attempt
 * started or cut short, a park, a retry, a pause, a resume, a restart, the settlement), numbered
 * with the step rows' `ev` in one sequence per run (see `run-log-store.ts`).
 */
const RUN_LOG_TABLE = `CREATE TABLE dk_tasks_run_log (
      run_id TEXT NOT NULL,
      ev INTEGER NOT NULL,
      type TEXT NOT NULL,
      data TEXT,
      at INTEGER NOT NULL,
      PRIMARY KEY (run_id, ev)
    ) WITHOUT ROWID`;

/**
 * A journal table as v10 makes it on a new object: with the `ev` column that v10 adds last (a
 * settled step's number in its run's event sequence; null while the step runs or waits).
 */
function withEventColumn(table: string): string {
  return table.replace(
    "at INTEGER NOT NULL,\n      PRIMARY KEY",
    "at INTEGER NOT NULL,\n      ev INTEGER,\n      PRIMARY KEY",
  );
}

/** The idempotency keys (v1). */
const RUNS_BY_KEY = `CREATE UNIQUE INDEX dk_tasks_runs_by_key ON dk_tasks_runs (idempotency_key)
      WHERE idempotency_key IS NOT NULL`;

/** Runs by their next wake (v1). */
const RUNS_BY_WAKE = `CREATE INDEX dk_tasks_runs_by_wake ON dk_tasks_runs (next_at) WHERE next_at IS NOT NULL`;

/** Runs by creation (v1). */
const RUNS_BY_CREATED = `CREATE INDEX dk_tasks_runs_by_created ON dk_tasks_runs (created_at, run_id)`;

/** The running runs (v7). */
const RUNS_RUNNING =
  "CREATE INDEX dk_tasks_runs_running ON dk_tasks_runs (run_id) WHERE state = 'running'";

/** Runs by state (v8). */
const RUNS_BY_STATE =
  "CREATE INDEX dk_tasks_runs_by_state ON dk_tasks_runs (state, created_at, run_id)";

/** Runs by definition and state (v8). */
const RUNS_BY_DEFINITION =
  "CREATE INDEX dk_tasks_runs_by_definition ON dk_tasks_runs (definition, state, created_at, run_id)";

/** Owed messages by when they are due (v5, remade in v6). */
const OUTBOX_NEXT = "CREATE INDEX dk_tasks_outbox_next ON dk_tasks_outbox (next_at)";

/** The step journal (v1). */
const STEPS_TABLE = `CREATE TABLE dk_tasks_steps (
      run_id TEXT NOT NULL,
      name TEXT NOT NULL,
      seq INTEGER NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('do', 'sleep', 'event')),
      state TEXT NOT NULL CHECK (state IN ('running', 'waiting', 'completed', 'failed')),
      attempt INTEGER NOT NULL,
      value TEXT,
      wake_at INTEGER,
      event_type TEXT,
      next_step TEXT,
      at INTEGER NOT NULL,
      PRIMARY KEY (run_id, name)
    ) WITHOUT ROWID`;

/** The events buffered for runs waiting on them (v1). */
const EVENTS_TABLE = `CREATE TABLE dk_tasks_events (
      run_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      type TEXT NOT NULL,
      payload TEXT NOT NULL,
      at INTEGER NOT NULL,
      PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID`;

/** The call journals of programs run inside a task (v3). */
const CALLS_TABLE = `CREATE TABLE dk_tasks_calls (
      run_id TEXT NOT NULL,
      journal TEXT NOT NULL,
      call_key TEXT NOT NULL,
      seq INTEGER NOT NULL,
      execution_id TEXT NOT NULL,
      module TEXT NOT NULL,
      method TEXT NOT NULL,
      args_digest TEXT NOT NULL,
      outcome TEXT NOT NULL,
      payload TEXT,
      at INTEGER NOT NULL,
      PRIMARY KEY (run_id, journal, call_key)
    ) WITHOUT ROWID`;

/** The attempts of each run (v4). */
const ATTEMPTS_TABLE = `CREATE TABLE dk_tasks_attempts (
      run_id TEXT NOT NULL,
      attempt INTEGER NOT NULL,
      started_at INTEGER NOT NULL,
      ended_at INTEGER,
      outcome TEXT,
      step TEXT,
      error TEXT,
      PRIMARY KEY (run_id, attempt)
    ) WITHOUT ROWID`;

/** The waits of `awaitChildren` (v5). */
const CHILD_WAITS_TABLE = `CREATE TABLE dk_tasks_child_waits (
      run_id TEXT NOT NULL,
      step TEXT NOT NULL,
      children TEXT NOT NULL,
      remaining INTEGER NOT NULL,
      PRIMARY KEY (run_id, step)
    ) WITHOUT ROWID`;

/** The parent's view of each child run it started (v6). */
const CHILDREN_TABLE = `CREATE TABLE dk_tasks_children (
      parent_run_id TEXT NOT NULL,
      step TEXT NOT NULL,
      idx INTEGER NOT NULL,
      seq INTEGER NOT NULL,
      key TEXT NOT NULL,
      secret TEXT NOT NULL,
      target TEXT NOT NULL,
      definition TEXT NOT NULL,
      child_run_id TEXT,
      state TEXT NOT NULL CHECK (state IN ('starting', 'running', 'completed', 'failed', 'cancelled')),
      result TEXT,
      error TEXT,
      settled_at INTEGER,
      wait_step TEXT,
      created_at INTEGER NOT NULL,
      PRIMARY KEY (parent_run_id, step, idx)
    ) WITHOUT ROWID`;

/** A child's side of each exchange (v6). */
const LINKS_TABLE = `CREATE TABLE dk_tasks_links (
      key TEXT NOT NULL PRIMARY KEY,
      secret TEXT NOT NULL,
      parent TEXT,
      parent_run_id TEXT,
      step TEXT,
      idx INTEGER,
      definition TEXT,
      child_run_id TEXT,
      expires_at INTEGER
    ) WITHOUT ROWID`;

/** The messages owed to other objects (v6). */
const OUTBOX_TABLE = `CREATE TABLE dk_tasks_outbox (
      id TEXT NOT NULL PRIMARY KEY,
      target TEXT NOT NULL,
      envelope TEXT NOT NULL,
      payload TEXT,
      attempts INTEGER NOT NULL,
      next_at INTEGER NOT NULL,
      created_at INTEGER NOT NULL
    ) WITHOUT ROWID`;

/** The link of a child run (v6). */
const LINKS_BY_RUN = `CREATE UNIQUE INDEX dk_tasks_links_by_run ON dk_tasks_links (child_run_id)
      WHERE child_run_id IS NOT NULL`;

/** Links kept after their run settled, by expiry (v6). */
const LINKS_BY_EXPIRY = `CREATE INDEX dk_tasks_links_by_expiry ON dk_tasks_links (expires_at)
      WHERE expires_at IS NOT NULL`;

/**
 * v11: a flow-controlled run by its definition and flow key, then state, priority (higher first) and
 * queue position: a key's slots in use are counted, and its queue read first in line first, from
 * one range each. Partial: runs of definitions without flow control have no entry.
 */
const RUNS_BY_FLOW = `CREATE INDEX dk_tasks_runs_by_flow ON dk_tasks_runs
      (definition, flow_key, state, priority DESC, queue_seq) WHERE flow_key IS NOT NULL`;

/** v11: each flow key with a queue or a rate window: its queue counter, recent starts and wake. */
const FLOWS_TABLE = `CREATE TABLE dk_tasks_flows (
      definition TEXT NOT NULL,
      flow_key TEXT NOT NULL,
      seq INTEGER NOT NULL,
      starts TEXT,
      wake_at INTEGER,
      PRIMARY KEY (definition, flow_key)
    ) WITHOUT ROWID`;
const FLOWS_BY_WAKE = `CREATE INDEX dk_tasks_flows_by_wake ON dk_tasks_flows (wake_at)
      WHERE wake_at IS NOT NULL`;

/** v11: cron schedules, each with the next tick it has not taken and what its ticks did. */
const SCHEDULES_TABLE = `CREATE TABLE dk_tasks_schedules (
      schedule_id TEXT NOT NULL PRIMARY KEY,
      definition TEXT NOT NULL,
      cron TEXT NOT NULL,
      timezone TEXT,
      input TEXT NOT NULL,
      overlap TEXT NOT NULL,
      backfill INTEGER NOT NULL,
      source TEXT NOT NULL,
      next_at INTEGER NOT NULL,
      last_tick_at INTEGER,
      last_run_id TEXT,
      missed INTEGER NOT NULL DEFAULT 0,
      skipped INTEGER NOT NULL DEFAULT 0,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    ) WITHOUT ROWID`;
const SCHEDULES_BY_NEXT = "CREATE INDEX dk_tasks_schedules_by_next ON dk_tasks_schedules (next_at)";

/** v12: how far each definition has taken each source's batches (`tasks.trigger`). */
const TRIGGERS_TABLE = `CREATE TABLE dk_tasks_triggers (
      definition TEXT NOT NULL,
      source TEXT NOT NULL,
      position INTEGER NOT NULL,
      run_id TEXT NOT NULL,
      updated_at INTEGER NOT NULL,
      PRIMARY KEY (definition, source)
    ) WITHOUT ROWID`;

/** The indexes of `dk_tasks_runs` before v11: what v9 makes again on its copy (CURRENT adds `by_flow`). */
const RUNS_INDEXES = [
  RUNS_BY_KEY,
  RUNS_BY_WAKE,
  RUNS_BY_CREATED,
  RUNS_RUNNING,
  RUNS_BY_STATE,
  RUNS_BY_DEFINITION,
];

/** `MIGRATIONS[n]` brings the tables from version n to n + 1. */
export const MIGRATIONS: ReadonlyArray<readonly string[]> = [
  // v1
  [
    `CREATE TABLE dk_tasks_runs (
${RUNS_COLUMNS_V1}
    ) WITHOUT ROWID`,
    RUNS_BY_KEY,
    RUNS_BY_WAKE,
    RUNS_BY_CREATED,
    STEPS_TABLE,
    EVENTS_TABLE,
  ],
  // v2: the breaker for attempts that die without progress. `progress` is how many journal rows
  // were settled when the run was last claimed; `stalls` how many attempts in a row ended (died or
  // were abandoned) without settling one more.
  [
    "ALTER TABLE dk_tasks_runs ADD COLUMN progress INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE dk_tasks_runs ADD COLUMN stalls INTEGER NOT NULL DEFAULT 0",
  ],
  // v3: step journals (`step.journal(name)`), the call journals of programs run inside a task. One
  // row per recorded call, keyed by run, journal name and call key; like the step journal, WITHOUT
  // ROWID with no secondary index, so recording a call writes exactly one b-tree row.
  [CALLS_TABLE],
  // v4: the attempts of each run, for its timeline (`attempts()`). The run row keeps when its
  // current attempt was claimed (written by the claim's own update); an attempt that ends without
  // settling the run (it parked, or the object died under it) leaves one row here, in the
  // transaction of the write that ends it. An attempt that settles the run is read from the run
  // row: a run that completes in one attempt writes no attempt row.
  [
    "ALTER TABLE dk_tasks_runs ADD COLUMN attempt_started_at INTEGER",
    // The W3C trace context a run was started under (`run(…, { trace })`), for tracing its attempts.
    "ALTER TABLE dk_tasks_runs ADD COLUMN trace TEXT",
    ATTEMPTS_TABLE,
  ],
  // v5: runs in other objects (child runs, see DESIGN.md "Child runs"). The parent's view of each
  // child it started (written at the start, settled once by the child's notification), the waits
  // of `awaitChildren` (a countdown, so a notification costs O(1)), the child's link to its parent,
  // and the outbox of messages owed to other objects, retried by the alarm until acknowledged.
  [
    `CREATE TABLE dk_tasks_children (
      parent_run_id TEXT NOT NULL,
      child_run_id TEXT NOT NULL,
      step TEXT NOT NULL,
      target TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('running', 'completed', 'failed', 'cancelled')),
      result TEXT,
      error TEXT,
      settled_at INTEGER,
      wait_step TEXT,
      PRIMARY KEY (parent_run_id, child_run_id)
    ) WITHOUT ROWID`,
    CHILD_WAITS_TABLE,
    `CREATE TABLE dk_tasks_parents (
      child_run_id TEXT NOT NULL PRIMARY KEY,
      parent TEXT NOT NULL,
      parent_run_id TEXT NOT NULL,
      key TEXT NOT NULL
    ) WITHOUT ROWID`,
    `CREATE TABLE dk_tasks_outbox (
      id TEXT NOT NULL PRIMARY KEY,
      target TEXT NOT NULL,
      message TEXT NOT NULL,
      attempts INTEGER NOT NULL,
      next_at INTEGER NOT NULL,
      created_at INTEGER NOT NULL
    ) WITHOUT ROWID`,
    "CREATE INDEX dk_tasks_outbox_next ON dk_tasks_outbox (next_at)",
  ],
  // v6: child runs whose every message proves its exchange (message version 2). A parent records
  // its intent (the child's step, a random key and secret, the target) before the start leaves;
  // the child keeps its side of the exchange by key in `dk_tasks_links`, after it settles too (a
  // tombstone until `expires_at`); the outbox stores a settlement's result text apart from its
  // envelope (one escaping, so a result of maxValueBytes fits a row). Version-1 exchanges carry no
  // secret and cannot be proven: their tables are replaced, not carried over.
  [
    "DROP TABLE dk_tasks_children",
    "DROP TABLE dk_tasks_parents",
    "DROP TABLE dk_tasks_outbox",
    "DELETE FROM dk_tasks_child_waits",
    CHILDREN_TABLE,
    LINKS_TABLE,
    LINKS_BY_RUN,
    LINKS_BY_EXPIRY,
    OUTBOX_TABLE,
    OUTBOX_NEXT,
  ],
  // v7: the runs a new instance of the object recovers on its first wake (their attempts died with
  // the instance before it): a partial index holding only running runs, keyed by id so that a
  // claim's refresh (a new deadline) does not touch it.
  [RUNS_RUNNING],
  // v8: reads that touch only what they answer (an inspector's filters and counts). A list by
  // state walks its state's range of `by_state` newest first; a list by definition walks one range
  // of `by_definition` per state; a count by state reads only index entries. Both change only
  // when a run is accepted, claimed, parked or settled (its state), never per step.
  [RUNS_BY_STATE, RUNS_BY_DEFINITION],
  // v9: runs an operator holds (`pause`/`resume`) and restarts (`restart`). The table is copied into one whose state check
  // admits `paused` (and `queued`, for flow control) and that has `pause_requested`; dropping the
  // old table drops its indexes, which are made again on the new one. One pass over the runs, in
  // the migration's one transaction.
  [
    RUNS_TABLE_V9("dk_tasks_runs_v9"),
    `INSERT INTO dk_tasks_runs_v9 (${RUNS_COLUMNS_V8}) SELECT ${RUNS_COLUMNS_V8} FROM dk_tasks_runs`,
    "DROP TABLE dk_tasks_runs",
    "ALTER TABLE dk_tasks_runs_v9 RENAME TO dk_tasks_runs",
    ...RUNS_INDEXES,
    RESTARTS_TABLE,
    DROPPED_STEPS_TABLE,
  ],
  // v10: a run's events as a stream (`tasks.events`). A settled step is its own event: its journal
  // row (and the copy a restart keeps) carries its number in the run's sequence, so a step costs
  // no row more; every other transition writes one row of `dk_tasks_run_log`, in the transaction
  // of the write it records.
  // `compensable` marks a run with a completed step that has a compensation (`compensate`), so a
  // cancel of a parked run knows it must replay the run to undo them instead of settling it.
  [
    RUN_LOG_TABLE,
    "ALTER TABLE dk_tasks_steps ADD COLUMN ev INTEGER",
    "ALTER TABLE dk_tasks_dropped_steps ADD COLUMN ev INTEGER",
    "ALTER TABLE dk_tasks_runs ADD COLUMN compensable INTEGER NOT NULL DEFAULT 0",
  ],
  // v11: flow control and schedules. A flow-controlled run carries its flow key, priority, queue
  // position and why it is queued; `by_flow` counts a key's slots in use and reads its queue;
  // `dk_tasks_flows` keeps each key's queue counter and rate window; `dk_tasks_schedules` each
  // cron schedule's next tick. Runs of other definitions are untouched (no entry in `by_flow`).
  [
    ...RUNS_FLOW_COLUMNS.map((column) => `ALTER TABLE dk_tasks_runs ADD COLUMN ${column}`),
    RUNS_BY_FLOW,
    FLOWS_TABLE,
    FLOWS_BY_WAKE,
    SCHEDULES_TABLE,
    SCHEDULES_BY_NEXT,
  ],
  // v12: triggers. Each (definition, source) keeps the end of the last batch that started a run, so
  // a batch delivered again starts nothing and a later one starts where it ended.
  [TRIGGERS_TABLE],
];

/**
 * The current schema (version {@link TASKS_SCHEMA_VERSION}) made at once on a new object, in place
 * of every step: the same tables, columns, constraints and indexes (`test/schema.test.ts` compares
 * the two), without tables built, altered and dropped again.
 */
export const CURRENT: readonly string[] = [
  RUNS_TABLE_CURRENT,
  ...RUNS_INDEXES,
  RUNS_BY_FLOW,
  withEventColumn(STEPS_TABLE),
  EVENTS_TABLE,
  CALLS_TABLE,
  ATTEMPTS_TABLE,
  CHILD_WAITS_TABLE,
  CHILDREN_TABLE,
  LINKS_TABLE,
  LINKS_BY_RUN,
  LINKS_BY_EXPIRY,
  OUTBOX_TABLE,
  OUTBOX_NEXT,
  RESTARTS_TABLE,
  withEventColumn(DROPPED_STEPS_TABLE),
  RUN_LOG_TABLE,
  FLOWS_TABLE,
  FLOWS_BY_WAKE,
  SCHEDULES_TABLE,
  SCHEDULES_BY_NEXT,
  TRIGGERS_TABLE,
];

/**
 * Brings the tables to {@link TASKS_SCHEMA_VERSION} through the one migration convention of
 * durablekit (`migrateSchema`): each missing step and the version row of
 * `dk_tasks_meta (name, value)` are applied in one transaction, so a half-migrated schema is never
 * visible.
 *
 * @throws TasksError `tasks/schema-too-new` when the tables were written by a newer version of this package.
 */
export function migrate(storage: DurableObjectStorage): void {
  migrateSchema(storage, {
    table: "tasks",
    steps: MIGRATIONS,
    current: CURRENT,
    packageName: "@durablekit/tasks",
    tooNew: (message) => new TasksError("tasks/schema-too-new", message),
  });
}
