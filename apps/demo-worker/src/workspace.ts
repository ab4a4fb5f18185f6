import { DurableObject } from "cloudflare:workers";
import type { Env } from "./env";

/** The name of the one workspace object that answers workspace-wide routes. */
export const WORKSPACE_NAME = "default";

/**
 * The demo's workspace Durable Object. Later layers (streams, tasks, programs) are composed here;
 * for now it proves that the object starts and that its SQLite storage reads and writes.
 */
export class Workspace extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS demo_health (id INTEGER PRIMARY KEY CHECK (id = 1), checks INTEGER NOT NULL)",
    );
  }

  /** Records one health check in SQLite and reads it back; `ok` is true when both worked. */
  health(): { ok: boolean; checks: number } {
    const sql = this.ctx.storage.sql;
    const row = sql
      .exec<{ checks: number }>(
        "INSERT INTO demo_health (id, checks) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET checks = checks + 1 RETURNING checks",
      )
      .one();
    return { ok: row.checks > 0, checks: row.checks };
  }
}
