import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "./poll.ts";
import { postJson } from "./requests.ts";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

// Creates one job, then waits on a 4 s run: long enough to be killed in the middle.
const SLOW_JOB_PROGRAM = `
import { createJob } from "codemode:jobs";
export default async function () {
  const job = await createJob({ name: "deploy" });
  const run = await job.start({ ref: "main", durationMs: 4000 });
  const done = await run.wait({ signal: AbortSignal.timeout(20000) });
  return { job: (await job.info()).id, done: done.status };
}`;

interface JobCounters {
  creates: number;
}

describe("POST /programs with a client-chosen execution id under wrangler dev", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir, vars: { DEMO_DEBUG: "on" } });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  const counters = async () => (await (await fetch(`${dev.url}/debug/jobs`)).json()) as JobCounters;

  it("joins the first execution when a request is retried with the same id after a SIGKILL mid-run: one execution, one job", async () => {
    const id = `deploy-${crypto.randomUUID()}`;
    const body = { code: SLOW_JOB_PROGRAM, onInterrupt: "restart" };
    // The first request dies with the server: its client never learns how it ended.
    const lost = postJson(dev, "/programs", body, { "Idempotency-Key": id }).catch(() => null);
    await poll(
      async () => ((await counters()).creates >= 1 ? true : undefined),
      30_000,
      "the program to create its job",
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    await dev.kill();
    expect(await lost).toBeNull();
    dev = await dev.restart();

    const retried = await postJson(dev, "/programs", { ...body, id });
    expect(retried.status).toBe(200);
    const execution = (await retried.json()) as {
      executionId: string;
      state: string;
      result: { job: string; done: string };
    };
    expect(execution).toMatchObject({
      executionId: id,
      state: "completed",
      result: { job: `job:${id}:1`, done: "succeeded" },
    });

    // A second retry answers the same execution again, and nothing ran twice.
    const again = await postJson(dev, "/programs", body, { "Idempotency-Key": id });
    expect(await again.json()).toMatchObject({ executionId: id, state: "completed" });
    expect((await counters()).creates).toBe(1);
    const record = (await (await fetch(`${dev.url}/programs/${id}`)).json()) as { attempt: number };
    expect(record.attempt).toBe(2);
  });

  it("refuses an Idempotency-Key that disagrees with the body's id", async () => {
    const response = await postJson(
      dev,
      "/programs",
      { code: "export default () => 1", id: "a" },
      { "Idempotency-Key": "b" },
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: "demo/bad-request" } });
  });
});
