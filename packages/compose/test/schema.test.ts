import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { isComposeError, migrateSchema, schemaTooNewMessage } from "../src/index";

function fixture() {
  return env.FIXTURE.getByName(`schema-${crypto.randomUUID()}`);
}

const V1 = ["CREATE TABLE dk_demo_items (id INTEGER PRIMARY KEY, name TEXT NOT NULL)"];
const V2 = ["ALTER TABLE dk_demo_items ADD COLUMN size INTEGER"];

describe("migrateSchema", () => {
  it("creates the tables and the version row once, and is a no-op after", async () => {
    await runInDurableObject(fixture(), async (_, ctx) => {
      expect(migrateSchema(ctx.storage, { table: "demo", steps: [V1] })).toBe(0);
      expect(migrateSchema(ctx.storage, { table: "demo", steps: [V1] })).toBe(1);
      const version = ctx.storage.sql
        .exec<{ value: number }>("SELECT value FROM dk_demo_meta WHERE name = 'schema_version'")
        .one().value;
      expect(version).toBe(1);
    });
  });

  it("runs only the missing steps, forward", async () => {
    await runInDurableObject(fixture(), async (_, ctx) => {
      migrateSchema(ctx.storage, { table: "demo", steps: [V1] });
      ctx.storage.sql.exec("INSERT INTO dk_demo_items (name) VALUES ('kept')");
      expect(migrateSchema(ctx.storage, { table: "demo", steps: [V1, V2] })).toBe(1);
      const row = ctx.storage.sql.exec("SELECT name, size FROM dk_demo_items").one();
      expect(row).toEqual({ name: "kept", size: null });
    });
  });

  it("refuses tables written by a newer version, with the package's own error", async () => {
    await runInDurableObject(fixture(), async (_, ctx) => {
      migrateSchema(ctx.storage, { table: "demo", steps: [V1, V2] });
      let thrown: unknown;
      try {
        migrateSchema(ctx.storage, { table: "demo", steps: [V1] });
      } catch (error) {
        thrown = error;
      }
      expect(isComposeError(thrown, "compose/schema-too-new")).toBe(true);
      expect((thrown as Error).message).toBe(schemaTooNewMessage("demo", 2, 1));
      const own = new Error("own");
      expect(() =>
        migrateSchema(ctx.storage, { table: "demo", steps: [V1], tooNew: () => own }),
      ).toThrow(own);
      // The package's own error gets the one message, with the package's name and both versions.
      const given: unknown[] = [];
      expect(() =>
        migrateSchema(ctx.storage, {
          table: "demo",
          steps: [V1],
          packageName: "@durablekit/demo",
          tooNew: (message, found, supported) => {
            given.push(message, found, supported);
            return own;
          },
        }),
      ).toThrow(own);
      expect(given).toEqual([schemaTooNewMessage("demo", 2, 1, "@durablekit/demo"), 2, 1]);
    });
  });

  it("leaves nothing behind when a step fails: the migration is one transaction", async () => {
    await runInDurableObject(fixture(), async (_, ctx) => {
      expect(() =>
        migrateSchema(ctx.storage, { table: "demo", steps: [[...V1, "NOT SQL"]] }),
      ).toThrow();
      const tables = ctx.storage.sql
        .exec("SELECT name FROM sqlite_master WHERE name = 'dk_demo_items'")
        .toArray();
      expect(tables).toEqual([]);
    });
  });

  it("makes a new object's tables with `current` instead of the steps, and migrates an old one by its steps", async () => {
    const current = [
      "CREATE TABLE dk_demo_items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, size INTEGER)",
    ];
    const failing = ["NOT SQL"];
    await runInDurableObject(fixture(), async (_, ctx) => {
      // The steps are not run on a new object: a failing step would throw.
      expect(migrateSchema(ctx.storage, { table: "demo", steps: [failing, V2], current })).toBe(0);
      ctx.storage.sql.exec("INSERT INTO dk_demo_items (name, size) VALUES ('new', 2)");
      expect(migrateSchema(ctx.storage, { table: "demo", steps: [V1, V2], current })).toBe(2);
    });
    await runInDurableObject(fixture(), async (_, ctx) => {
      migrateSchema(ctx.storage, { table: "demo", steps: [V1] });
      // At version 1, `current` would fail (the table exists): only the missing step runs.
      expect(migrateSchema(ctx.storage, { table: "demo", steps: [V1, V2], current })).toBe(1);
      ctx.storage.sql.exec("INSERT INTO dk_demo_items (name, size) VALUES ('old', 1)");
      const version = ctx.storage.sql
        .exec<{ value: number }>("SELECT value FROM dk_demo_meta WHERE name = 'schema_version'")
        .one().value;
      expect(version).toBe(2);
    });
  });

  it("says the same of tables a newer version wrote, whichever package: tables, both versions, the fix", () => {
    expect(schemaTooNewMessage("tasks", 9, 8, "@durablekit/tasks")).toBe(
      "The dk_tasks_* tables are at schema version 9, newer than the 8 this version of @durablekit/tasks understands. Deploy the newer package version.",
    );
    expect(schemaTooNewMessage("demo", 2, 1)).toBe(
      "The dk_demo_* tables are at schema version 2, newer than the 1 this package version understands. Deploy the newer package version.",
    );
  });
});
