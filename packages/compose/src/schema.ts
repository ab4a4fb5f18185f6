import { ComposeError } from "./errors";

/** One migration step: the statements (or a function) that bring the schema from version n-1 to n. */
export type SchemaStep = readonly string[] | ((sql: SqlStorage) => void);

/** Options of {@link migrateSchema}. */
export interface SchemaOptions {
  /** The package's table noun: its tables are `dk_<table>_*`, its version row lives in `dk_<table>_meta`. */
  table: string;
  /** Steps in order: `steps[0]` creates version 1, `steps[n-1]` brings version n-1 to n. The schema version is `steps.length`. */
  steps: readonly SchemaStep[];
  /**
   * The package's own error for tables written by a newer version (its `<package>/schema-too-new`),
   * given the message every package says it with ({@link schemaTooNewMessage}).
   */
  tooNew?: (message: string, found: number, supported: number) => Error;
  /** The package's name (`@durablekit/tasks`), for the schema-too-new message. */
  packageName?: string;
  /**
   * The statements that create the current version at once, run instead of every step on a new
   * object (no version row): fewer statements and no table built, altered and dropped again. They
   * must make the same tables, columns, constraints and indexes as the steps; keep a test that
   * compares the two (the packages' `schema` tests do).
   */
  current?: readonly string[];
}

/**
 * What every package says of tables a newer version of it wrote (its `<package>/schema-too-new`
 * error's message): the tables, both versions, and the fix.
 *
 * @param table the package's table noun (`dk_<table>_*`).
 * @param packageName the package, e.g. `@durablekit/streams`; without it the message says "this package version".
 */
export function schemaTooNewMessage(
  table: string,
  found: number,
  supported: number,
  packageName?: string,
): string {
  const reader =
    packageName === undefined ? "this package version" : `this version of ${packageName}`;
  return `The dk_${table}_* tables are at schema version ${found}, newer than the ${supported} ${reader} understands. Deploy the newer package version.`;
}

/**
 * The one schema-migration convention of durablekit. Each package keeps a version row
 * (`name = 'schema_version'`, an integer) in `dk_<table>_meta (name TEXT PRIMARY KEY, value INTEGER)`.
 * On construction it runs the missing steps (on a new object, the `current` statements when
 * given), forward only, and the new version row in one transaction; a version newer than the package knows is refused, never misread, so a downgrade
 * never corrupts data.
 *
 * @returns the version found before migrating (0 for a new object).
 * @throws the package's `tooNew` error (default {@link ComposeError} `compose/schema-too-new`) when the stored version is newer.
 */
export function migrateSchema(storage: DurableObjectStorage, options: SchemaOptions): number {
  const meta = `dk_${options.table}_meta`;
  const supported = options.steps.length;
  const sql = storage.sql;
  sql.exec(
    `CREATE TABLE IF NOT EXISTS ${meta} (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID`,
  );
  const found =
    sql
      .exec<{ value: number }>(`SELECT value FROM ${meta} WHERE name = 'schema_version'`)
      .toArray()[0]?.value ?? 0;
  if (found === supported) return found;
  if (found > supported) {
    const message = schemaTooNewMessage(options.table, found, supported, options.packageName);
    throw (
      options.tooNew?.(message, found, supported) ??
      new ComposeError("compose/schema-too-new", message)
    );
  }
  const steps =
    found === 0 && options.current !== undefined ? [options.current] : options.steps.slice(found);
  storage.transactionSync(() => {
    for (const step of steps) {
      if (typeof step === "function") step(sql);
      // One call for a step's statements (no bindings): a statement's cost here is mostly the call.
      else if (step.length > 0) sql.exec(step.join(";\n"));
    }
    sql.exec(
      `INSERT INTO ${meta} (name, value) VALUES ('schema_version', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
      supported,
    );
  });
  return found;
}
