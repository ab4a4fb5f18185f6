import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

const base = "http://demo";

async function call(method: string, path: string, body?: unknown) {
  const response = await exports.default.fetch(`${base}${path}`, {
    method,
    ...(method === "POST" ? { headers: { "Content-Type": "application/json" } } : {}),
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Polls GET /fanout/:runId until the run settled and the workspace owes nothing. */
async function fannedIn(runId: string) {
  for (let i = 0; i < 500; i++) {
    const { body } = await call("GET", `/fanout/${runId}`);
    if (["completed", "failed", "cancelled"].includes(body.state as string) && body.owed === 0) {
      return body;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`fan-out ${runId} did not settle`);
}

describe("fan-out routes", () => {
  // Seven child runs over three objects, with a settlement back-off or two: seconds, not ms.
  it("fans a job out to child runs in shard objects and fans their results in, each child run once", {
    timeout: 20_000,
  }, async () => {
    const started = await call("POST", "/fanout", {
      children: 7,
      objects: 3,
      idempotencyKey: "fan-1",
    });
    expect(started.status).toBe(202);
    const runId = started.body.runId as string;
    const done = await fannedIn(runId);
    expect(done).toMatchObject({
      state: "completed",
      children: 7,
      started: 7,
      settled: 7,
      result: { children: 7, objects: 3, squares: [0, 1, 4, 9, 16, 25, 36], notCompleted: 0 },
    });
    // Children 0, 3 and 6 ran in shard-0: each run's work once, and nothing left to deliver.
    for (const [shard, count] of [
      ["shard-0", 3],
      ["shard-1", 2],
      ["shard-2", 2],
    ] as const) {
      const { body } = await call("GET", `/debug/shards/${shard}`);
      const work = Object.values(body.work as Record<string, number>);
      expect(work, shard).toHaveLength(count);
      expect(
        work.every((n) => n === 1),
        shard,
      ).toBe(true);
      expect(body.outbox, shard).toBe(0);
    }
    const again = await call("POST", "/fanout", {
      children: 7,
      objects: 3,
      idempotencyKey: "fan-1",
    });
    expect(again).toMatchObject({ status: 200, body: { runId, accepted: false } });
    // The workspace inspector's run view lists the children, in start order, where they run.
    const view = await call("GET", `/inspect/api/runs/${runId}`);
    const children = view.body.children as Array<Record<string, unknown>>;
    expect(
      children.map((c) => [c.step, c.state, (c.target as { binding: string }).binding]),
    ).toEqual(Array.from({ length: 7 }, (_, i) => [`child ${i}`, "completed", "SHARD"]));
    expect(children.every((c) => c.here === false && typeof c.runId === "string")).toBe(true);
  });

  it("refuses a bad fan-out with a coded 400, and an unknown run or shard with a 404", async () => {
    for (const body of [
      {},
      { children: 0 },
      { children: 1001 },
      { children: 2, objects: 101 },
      { children: 2, ms: -1 },
      { children: 2, extra: true },
      { children: 2, idempotencyKey: 5 },
      [],
    ]) {
      const answer = await call("POST", "/fanout", body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(String((answer.body.error as { code?: string }).code)).toMatch(/^demo\//);
    }
    expect((await call("GET", "/fanout/no-such-run")).status).toBe(404);
    expect((await call("GET", "/debug/shards/shard-100")).status).toBe(404);
  });
});
