import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostCounts } from "../../src/host-counts.ts";
import { releaseProgram } from "../fixtures/release-program.ts";
import { poll } from "./poll.ts";
import { postJson } from "./requests.ts";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

const JOBS_PROGRAM = releaseProgram(200);

async function getJson<T = Record<string, unknown>>(dev: WranglerDev, path: string): Promise<T> {
  return (await (await fetch(`${dev.url}${path}`)).json()) as T;
}

describe("replayable programs under wrangler dev, across a SIGKILL", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir, vars: { DEMO_DEBUG: "on" } });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("resumes an interrupted program after wrangler dev was killed and restarted: start ran once and the revived Run served wait", async () => {
    const id = `release-${crypto.randomUUID()}`;
    const started = await postJson(dev, "/programs", { id, code: JOBS_PROGRAM });
    expect(started.status).toBe(200);
    expect(await started.json()).toEqual({
      executionId: id,
      state: "interrupted",
      interrupt: { key: "2", callId: `${id}:2`, payload: { reason: "ship it?" } },
    });

    await dev.kill();
    dev = await dev.restart();

    expect(await getJson(dev, `/programs/${id}`)).toMatchObject({
      state: "interrupted",
      onInterrupt: "replay",
      interrupt: { key: "2", callId: `${id}:2`, payload: { reason: "ship it?" } },
    });
    const resumed = await postJson(dev, `/programs/${id}/resume`, {
      value: { approved: true, by: "ada" },
    });
    expect(resumed.status).toBe(200);
    expect(await resumed.json()).toMatchObject({
      executionId: id,
      state: "completed",
      result: {
        shipped: true,
        by: "ada",
        done: { id: `run:${id}:1.1`, status: "succeeded" },
        job: { id: `job:${id}:1`, name: "release" },
      },
    });

    const counts = await getJson<HostCounts>(dev, `/debug/jobs/${id}`);
    // Ran before the kill, answered from the journal after it.
    expect(counts).toMatchObject({ creates: 1, starts: 1, approvals: 1 });
    // wait() ran once, on the Run revived from the journal; info() revived the Job.
    expect(counts).toMatchObject({ waits: 1, revivedWaits: 1, revives: 2 });
    expect(counts.disposals).toBe(counts.targets);

    // A second resume is refused; the execution stays completed.
    const twice = await postJson(dev, `/programs/${id}/resume`, { value: { approved: false } });
    expect(twice.status).toBe(409);
    expect(await twice.json()).toMatchObject({ error: { code: "bridge/conflict" } });
    expect(await getJson(dev, `/programs/${id}`)).toMatchObject({ state: "completed" });
  });

  it("replays a resumed program killed in the middle of run.wait() when POST /programs is retried: calls before it answered from the journal, the wait run again once", async () => {
    const id = `release-${crypto.randomUUID()}`;
    const code = releaseProgram(3000);
    const started = await postJson(dev, "/programs", { id, code });
    expect(await started.json()).toMatchObject({ state: "interrupted" });
    // The resume's client never learns how it ended: the server dies while wait() runs.
    const lost = postJson(dev, `/programs/${id}/resume`, {
      value: { approved: true, by: "cy" },
    }).catch(() => null);
    await poll(
      async () =>
        (await getJson<HostCounts>(dev, `/debug/jobs/${id}`)).waits >= 1 ? true : undefined,
      30_000,
      "the resumed program to call wait()",
    );
    await dev.kill();
    expect(await lost).toBeNull();
    dev = await dev.restart();

    const retried = await postJson(dev, "/programs", { id, code });
    expect(await retried.json()).toMatchObject({
      executionId: id,
      state: "completed",
      result: { shipped: true, by: "cy", done: { status: "succeeded" } },
    });
    const counts = await getJson<HostCounts>(dev, `/debug/jobs/${id}`);
    expect(counts).toMatchObject({ creates: 1, starts: 1, approvals: 1 });
    // The wait in flight at the kill was not journaled, so it ran again, once, on a revived Run.
    expect(counts).toMatchObject({ waits: 2, revivedWaits: 2 });
    expect(counts.disposals).toBeLessThanOrEqual(counts.targets);
  });

  it("completes a demo.program@v1 task resumed by an event after a SIGKILL, each host call run once", async () => {
    const response = await postJson(dev, "/tasks/demo.program@v1", {
      input: { code: JOBS_PROGRAM },
    });
    expect(response.status).toBe(202);
    const { runId } = (await response.json()) as { runId: string };
    await poll(
      async () => {
        const run = await getJson(dev, `/tasks/${runId}`);
        expect(run.state).not.toBe("failed");
        return run.state === "waiting" ? run : undefined;
      },
      30_000,
      "the task to wait for its resume event",
    );
    expect(await getJson(dev, `/debug/executions/${runId}/jobs`)).toMatchObject({
      creates: 1,
      starts: 1,
      approvals: 1,
      waits: 0,
    });

    await dev.kill();
    dev = await dev.restart();

    const sent = await postJson(dev, `/tasks/${runId}/events/resume`, {
      approved: true,
      by: "bo",
    });
    expect(await sent.json()).toEqual({ result: "delivered" });
    const run = await poll(
      async () => {
        const snapshot = await getJson(dev, `/tasks/${runId}`);
        return ["completed", "failed", "cancelled"].includes(snapshot.state as string)
          ? snapshot
          : undefined;
      },
      30_000,
      "the task to complete",
    );
    expect(run).toMatchObject({
      state: "completed",
      result: {
        executionId: `program:${runId}`,
        state: "completed",
        result: { shipped: true, by: "bo", done: { status: "succeeded" } },
      },
    });
    const counts = await getJson<HostCounts>(dev, `/debug/executions/${runId}/jobs`);
    expect(counts).toMatchObject({
      creates: 1,
      starts: 1,
      approvals: 1,
      waits: 1,
      revivedWaits: 1,
      // Revived from the journal, not made live again (2 live + 2 revived targets).
      revives: 2,
      targets: 4,
    });
    expect(counts.disposals).toBe(counts.targets);
  });
});
