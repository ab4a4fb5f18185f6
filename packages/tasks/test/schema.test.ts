import { env, runInDurableObject } from "cloudflare:test";
import { migrateSchema } from "@durablekit/compose";
import { countingState, schemaShape } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { CURRENT, MIGRATIONS, migrate, TASKS_SCHEMA_VERSION } from "../src/store/schema";

/** Drops every dk_tasks_* table (their indexes go with them). */
function dropAll(sql: SqlStorage): void {
  const tables = sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 9) = 'dk_tasks_'",
    )
    .toArray();
  for (const { name } of tables) sql.exec(`DROP TABLE ${name}`);
}

describe("schema", () => {
  it("makes on a new object, at once, the schema its ten migration steps make", async () => {
    const stub = env.FIXTURE.getByName(`schema-${crypto.randomUUID()}`);
    await runInDurableObject(stub, async (_, ctx) => {
      const sql = ctx.storage.sql;
      dropAll(sql);
      const counted = countingState(ctx);
      migrate(counted.storage);
      const created = schemaShape(sql, "tasks");
      // The shortcut ran: the current statements in one call (after the version table's), no
      // ALTER and no DROP.
      const texts = counted.statements(0, /ALTER|DROP|CREATE/);
      expect(texts.filter((t) => /ALTER|DROP/.test(t))).toEqual([]);
      expect(texts).toHaveLength(2);
      expect(texts[1]).toBe(CURRENT.join(";\n"));

      dropAll(sql);
      migrateSchema(ctx.storage, { table: "tasks", steps: MIGRATIONS });
      const migrated = schemaShape(sql, "tasks");
      expect(created.length).toBeGreaterThan(30);
      expect(created).toEqual(migrated);
      expect(MIGRATIONS.length).toBe(TASKS_SCHEMA_VERSION);
    });
  });

  it("carries every run through v9's copy of the runs table, and then admits paused runs", async () => {
    const stub = env.FIXTURE.getByName(`schema-v9-${crypto.randomUUID()}`);
    await runInDurableObject(stub, async (_, ctx) => {
      const sql = ctx.storage.sql;
      dropAll(sql);
      migrateSchema(ctx.storage, { table: "tasks", steps: MIGRATIONS.slice(0, 8) });
      const states = ["pending", "running", "waiting", "completed", "failed", "cancelled"];
      states.forEach((state, i) => {
        sql.exec(
          `INSERT INTO dk_tasks_runs (run_id, definition, state, input, retain, attempt, next_at,
             cancel_requested, created_at, updated_at, progress, stalls, trace)
           VALUES (?, 'work', ?, '{"json":1}', 1, ?, ?, ?, ?, ?, ?, ?, ?)`,
          `run-${i}`,
          state,
          i,
          i < 3 ? 1_000 + i : null,
          i === 1 ? 1 : 0,
          10 + i,
          20 + i,
          i,
          i * 2,
          i === 2 ? "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" : null,
        );
      });
      const before = sql.exec("SELECT * FROM dk_tasks_runs ORDER BY run_id").toArray();
      migrate(ctx.storage);
      const after = sql.exec("SELECT * FROM dk_tasks_runs ORDER BY run_id").toArray();
      expect(after).toEqual(
        before.map((row) => ({
          ...row,
          pause_requested: 0,
          deadline_at: null,
          compensable: 0,
          flow_key: null,
          priority: 0,
          queue_seq: null,
          queued_for: null,
        })),
      );
      expect(
        sql.exec("SELECT name FROM sqlite_master WHERE name = 'dk_tasks_runs_v9'").toArray(),
      ).toEqual([]);
      // The wake index came back with the table: the due runs are found by it.
      const plan = sql
        .exec<{ detail: string }>(
          "EXPLAIN QUERY PLAN SELECT run_id FROM dk_tasks_runs WHERE next_at IS NOT NULL AND next_at <= 5000 ORDER BY next_at",
        )
        .toArray()
        .map((row) => row.detail)
        .join(" ");
      expect(plan).toContain("dk_tasks_runs_by_wake");
      sql.exec("UPDATE dk_tasks_runs SET state = 'paused', next_at = NULL WHERE run_id = 'run-0'");
      expect(() =>
        sql.exec("UPDATE dk_tasks_runs SET state = 'resting' WHERE run_id = 'run-0'"),
      ).toThrow(/CHECK/);
    });
  });
});
