import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "./poll.ts";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

async function getJson(dev: WranglerDev, path: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${dev.url}${path}`);
  return (await response.json()) as Record<string, unknown>;
}

/** What GET /fanout/:runId answers (reads that fail while the server restarts are skipped). */
async function status(
  dev: WranglerDev,
  runId: string,
): Promise<Record<string, unknown> | undefined> {
  try {
    return await getJson(dev, `/fanout/${runId}`);
  } catch {
    return undefined;
  }
}

describe("child runs under wrangler dev", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir, vars: { DEMO_DEBUG: "on" } });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("fans out to 100 children on 100 objects through two SIGKILLs, one during the fan-out and one during the fan-in: one child run per object, all 100 results, nothing owed", async () => {
    const children = 100;
    const response = await fetch(`${dev.url}/fanout`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      // 30 ms of durable sleep between starts: the fan-out takes seconds, so a kill can land in it.
      body: JSON.stringify({ children, objects: children, ms: 1500, spacingMs: 30 }),
    });
    expect(response.status).toBe(202);
    const { runId } = (await response.json()) as { runId: string };

    // Kill in the middle of the fan-out: some children started, not all.
    const during = await poll(
      async () => {
        const s = await status(dev, runId);
        return s && (s.started as number) >= 10 ? s : undefined;
      },
      30_000,
      "ten children to start",
    );
    expect(during.started as number).toBeLessThan(children);
    await dev.kill();
    dev = await dev.restart();

    // Kill in the middle of the fan-in: every child started, some settled, not all.
    const fanIn = await poll(
      async () => {
        const s = await status(dev, runId);
        return s && s.started === children && (s.settled as number) >= 1 ? s : undefined;
      },
      60_000,
      "every child to start and one to settle",
    );
    expect(fanIn.settled as number).toBeLessThan(children);
    await dev.kill();
    dev = await dev.restart();

    const done = await poll(
      async () => {
        const s = await status(dev, runId);
        return s && s.state === "completed" && s.owed === 0 ? s : undefined;
      },
      120_000,
      "the fan-out to complete",
    );
    expect(done).toMatchObject({
      children,
      started: children,
      settled: children,
      result: {
        children,
        objects: children,
        squares: Array.from({ length: children }, (_, i) => i * i),
        notCompleted: 0,
      },
    });
    // Each object holds exactly one child run, whose work step completed; only a step a kill cut
    // may have run twice. No object owes a message.
    let ranTwice = 0;
    for (let i = 0; i < children; i++) {
      const shard = await poll(
        async () => {
          const s = await getJson(dev, `/debug/shards/shard-${i}`).catch(() => undefined);
          return s && s.outbox === 0 ? s : undefined;
        },
        60_000,
        `shard-${i} to owe nothing`,
      );
      expect(shard.runs, `shard-${i}`).toBe(1);
      const work = Object.values(shard.work as Record<string, number>);
      expect(work, `shard-${i}`).toHaveLength(1);
      expect([1, 2], `shard-${i}`).toContain(work[0]);
      if (work[0] === 2) ranTwice++;
    }
    expect(ranTwice).toBeLessThan(children);
  }, 300_000);
});
