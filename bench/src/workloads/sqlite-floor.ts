import { perSecond, sampleChunk, timeLoop } from "../timing";
import type { Workload } from "../workload";

const ROWS = 10_000;

/**
 * The floor every storage figure is compared to: 10,000 single-row inserts of a ~120-byte JSON
 * text into a plain SQLite table in the same kind of Durable Object, one `sql.exec` per row.
 */
export const sqliteFloor: Workload = {
  name: "sqlite-floor",
  title: `raw SQLite insert floor: ${ROWS.toLocaleString("en")} single-row inserts of ~120-byte JSON`,
  metrics: [
    { key: "rowsPerSecond", label: "inserts/s", unit: "rows/s", better: "higher" },
    { key: "msTotal", label: `time for ${ROWS}`, unit: "ms", better: "lower" },
    {
      key: "rowsWrittenPerInsert",
      label: "rows written per insert",
      unit: "rows",
      better: "lower",
    },
  ],
  ours: {
    name: "sqlite",
    run({ ctx }) {
      const sql = ctx.storage.sql;
      sql.exec(
        "CREATE TABLE IF NOT EXISTS floor_rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",
      );
      const bodies = Array.from({ length: ROWS }, (_, i) => JSON.stringify(sampleChunk(i)));
      let rowsWritten = 0;
      const msTotal = timeLoop(ROWS, (i) => {
        rowsWritten += sql.exec("INSERT INTO floor_rows (body) VALUES (?)", bodies[i]).rowsWritten;
      });
      return {
        rowsPerSecond: perSecond(ROWS, msTotal),
        msTotal,
        rowsWrittenPerInsert: rowsWritten / ROWS,
      };
    },
  },
};
