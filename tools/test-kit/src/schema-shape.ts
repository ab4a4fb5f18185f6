/** One SQL text with its layout taken out: runs of spaces made one, no space around `,`, `(`, `)`. */
function normalized(sql: string): string {
  return sql
    .replace(/\s+/g, " ")
    .replace(/\s*([,()])\s*/g, "$1")
    .trim();
}

/**
 * The schema of a package's `dk_<table>_*` tables as comparable lines: every table and index by
 * name with its SQL text without layout (so a column added by `ALTER TABLE` reads as one declared
 * in `CREATE TABLE`), and every column's name, type, NOT NULL, default and key position. Two ways
 * of making a schema (its migration steps, its `current` statements) must give equal shapes.
 */
export function schemaShape(sql: SqlStorage, table: string): string[] {
  const lines: string[] = [];
  const objects = sql
    .exec<{ type: string; name: string; sql: string | null }>(
      "SELECT type, name, sql FROM sqlite_master WHERE substr(name, 1, ?) = ? ORDER BY name",
      `dk_${table}_`.length,
      `dk_${table}_`,
    )
    .toArray();
  for (const object of objects) {
    lines.push(`${object.type} ${object.name}: ${normalized(object.sql ?? "")}`);
    if (object.type !== "table") continue;
    for (const column of sql.exec(`PRAGMA table_xinfo(${object.name})`)) {
      lines.push(
        `  ${object.name}.${column.name} ${column.type} notnull=${column.notnull} default=${column.dflt_value} pk=${column.pk}`,
      );
    }
  }
  return lines;
}
