import { abortAllDurableObjects, env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { PROGRAM } from "./fixtures/worker";
import { freshStub } from "./helpers";

/** The statements other than SELECT that `read` runs on the object's own SQL. */
function writesOf(state: DurableObjectState, read: () => unknown): string[] {
  const sql = state.storage.sql;
  const exec = sql.exec.bind(sql);
  const statements: string[] = [];
  sql.exec = ((query: string, ...bindings: unknown[]) => {
    if (!/^\s*SELECT/i.test(query))
      statements.push(query.trim().split(/\s+/).slice(0, 6).join(" "));
    return exec(query, ...bindings);
  }) as typeof sql.exec;
  try {
    read();
  } finally {
    sql.exec = exec as typeof sql.exec;
  }
  return statements;
}

describe("read-only means read-only", () => {
  it("shows a replay run on the executor's own journal from a new instance running nothing but SELECT", async () => {
    let stub = freshStub();
    await runInDurableObject(stub, async ({ executor }) => {
      const run = await executor.execute(
        PROGRAM,
        { name: "ada" },
        { id: "own", onInterrupt: "replay" },
      );
      expect(run.state).toBe("completed");
    });
    // A new instance of the object: its executor has not opened its own journal.
    await abortAllDurableObjects();
    // A stub connected to an aborted object stays broken: reach the object anew.
    stub = env.FIXTURE.get(stub.id);
    await runInDurableObject(stub, ({ inspector }, state) => {
      let calls = 0;
      const statements = writesOf(state, () => {
        calls = inspector.execution("own")?.calls.length ?? 0;
      });
      expect(calls).toBe(3);
      expect(statements).toEqual([]);
    });
  });
});
