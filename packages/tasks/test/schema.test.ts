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
  it("makes on a new object, at once, the schema its eight migration steps make", async () => {
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
});
