import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "./poll.ts";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

async function getJson(dev: WranglerDev, path: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${dev.url}${path}`);
  return (await response.json()) as Record<string, unknown>;
}

describe("tasks under wrangler dev", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir, vars: { DEMO_DEBUG: "on" } });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("completes a demo.count@v1 run after a SIGKILL mid-run, each i in its stream exactly once", async () => {
    const steps = 8;
    const response = await fetch(`${dev.url}/tasks/demo.count@v1`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ input: { steps, stepMs: 400, stream: "e2e-count" } }),
    });
    expect(response.status).toBe(202);
    const { runId } = (await response.json()) as { runId: string };

    // Let a few steps run, then kill wrangler and workerd at once, in the middle of a step.
    await poll(
      async () => {
        const executions = await getJson(dev, `/debug/executions/${runId}`);
        return Object.keys(executions).length >= 3 ? executions : undefined;
      },
      30_000,
      "three steps to start",
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    await dev.kill();
    dev = await dev.restart();

    // Nothing pokes the run: the alarm, armed at the claim deadline, reclaims and replays it.
    const run = await poll(
      async () => {
        const snapshot = await getJson(dev, `/tasks/${runId}`);
        return snapshot.state === "completed" ? snapshot : undefined;
      },
      60_000,
      "the run to complete after the restart",
    );
    expect(run).toMatchObject({ result: { counted: steps } });
    expect(run.attempt as number).toBeGreaterThanOrEqual(2);

    const executions = (await getJson(dev, `/debug/executions/${runId}`)) as Record<string, number>;
    const counts = Array.from({ length: steps }, (_, i) => executions[`step-${i}`]);
    // Every step ran; only a step cut by the kill may have run twice.
    for (const count of counts) expect([1, 2]).toContain(count);
    const attempts = await getJson(dev, `/inspect/api/runs/${runId}`)
      .then((view) => (view as { attempts?: unknown }).attempts)
      .catch(() => null);
    expect(
      counts.filter((count) => count === 2).length,
      JSON.stringify({ executions, attempts }),
    ).toBeLessThanOrEqual(1);

    const stream = await getJson(dev, "/debug/streams/e2e-count");
    const chunks = stream.chunks as Array<{ seq: number; chunk: { i: number } }>;
    expect(chunks.map((entry) => entry.chunk.i)).toEqual(
      Array.from({ length: steps }, (_, i) => i),
    );
    expect(chunks.map((entry) => entry.seq)).toEqual(Array.from({ length: steps }, (_, i) => i));
  });
});
