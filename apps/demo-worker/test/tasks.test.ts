import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { WORKSPACE_NAME } from "../src/workspace";

const base = "http://demo";

async function call(method: string, path: string, body?: unknown, raw?: string) {
  const response = await exports.default.fetch(`${base}${path}`, {
    method,
    ...(method === "POST" ? { headers: { "Content-Type": "application/json" } } : {}),
    ...(raw !== undefined
      ? { body: raw }
      : body === undefined
        ? {}
        : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function settled(runId: string) {
  for (let i = 0; i < 400; i++) {
    const { body } = await call("GET", `/tasks/${runId}`);
    if (["completed", "failed", "cancelled"].includes(body.state as string)) return body;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`run ${runId} did not settle`);
}

describe("task routes", () => {
  it("runs demo.count@v1, appending each i to its stream and counting real executions", async () => {
    const started = await call("POST", "/tasks/demo.count@v1", {
      input: { steps: 3, stream: "count-route" },
      idempotencyKey: "count-route",
    });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ accepted: true });
    const runId = started.body.runId as string;
    const again = await call("POST", "/tasks/demo.count@v1", {
      input: { steps: 3 },
      idempotencyKey: "count-route",
    });
    expect(again).toMatchObject({ status: 200, body: { runId, accepted: false } });
    const done = await settled(runId);
    expect(done).toMatchObject({ state: "completed", result: { counted: 3 }, attempt: 1 });
    expect((done.steps as Array<{ name: string }>).map((step) => step.name)).toEqual([
      "step-0",
      "step-1",
      "step-2",
    ]);
    expect((await call("GET", `/debug/executions/${runId}`)).body).toEqual({
      "step-0": 1,
      "step-1": 1,
      "step-2": 1,
    });
    const stream = await call("GET", "/debug/streams/count-route");
    expect(stream.body).toMatchObject({
      cursor: 3,
      chunks: [
        { seq: 0, chunk: { i: 0 } },
        { seq: 1, chunk: { i: 1 } },
        { seq: 2, chunk: { i: 2 } },
      ],
    });
  });

  it("completes demo.approval@v1 with the payload of its approve event", async () => {
    const { body } = await call("POST", "/tasks/demo.approval@v1", {});
    const runId = body.runId as string;
    for (let i = 0; i < 100; i++) {
      if ((await call("GET", `/tasks/${runId}`)).body.state === "waiting") break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await call("GET", `/tasks/${runId}`)).body).toMatchObject({
      state: "waiting",
      reason: "event",
      eventType: "approve",
    });
    const sent = await call("POST", `/tasks/${runId}/events/approve`, { by: "ada" });
    expect(sent).toEqual({ status: 200, body: { result: "delivered" } });
    expect(await settled(runId)).toMatchObject({ state: "completed", result: { by: "ada" } });
    const late = await call("POST", `/tasks/${runId}/events/approve`, {});
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: { code: "tasks/closed" } });
  });

  it("cancels a waiting run", async () => {
    const { body } = await call("POST", "/tasks/demo.approval@v1", {});
    const runId = body.runId as string;
    expect(await call("POST", `/tasks/${runId}/cancel`, { reason: "no longer needed" })).toEqual({
      status: 200,
      body: { cancelled: true },
    });
    expect(await settled(runId)).toMatchObject({ state: "cancelled", reason: "no longer needed" });
    expect((await call("POST", `/tasks/${runId}/cancel`)).body).toEqual({ cancelled: false });
  });

  it("answers bad requests with coded 4xx errors", async () => {
    const cases = [
      [await call("POST", "/tasks/demo.count@v1", undefined, "{not json"), 400, "demo/bad-json"],
      [await call("POST", "/tasks/nope@v1", {}), 404, "tasks/unknown-definition"],
      [await call("GET", "/tasks/no-such-run"), 404, "tasks/not-found"],
      [await call("POST", "/tasks/no-such-run/cancel"), 404, "tasks/not-found"],
      [await call("POST", "/tasks/no-such-run/events/approve", {}), 404, "tasks/not-found"],
      [
        await call("POST", "/tasks/demo.count@v1", { input: { steps: -1 } }),
        400,
        "demo/invalid-input",
      ],
      [
        await call("POST", "/tasks/demo.approval@v1", { input: { pad: "x".repeat(70_000) } }),
        413,
        "tasks/too-large",
      ],
    ] as const;
    for (const [response, status, code] of cases) {
      expect(response.status).toBe(status);
      expect(response.body).toMatchObject({ error: { code, message: expect.any(String) } });
    }
  });
});

/** The `id:` and the JSON `data:` of each message frame of an SSE body, and its control events. */
function frames(text: string) {
  const messages: Array<{ id: number; data: { type: string; seq: number } }> = [];
  const controls: string[] = [];
  for (const block of text.split("\n\n")) {
    const id = /^id: (\d+)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    const event = /^event: (.*)$/m.exec(block)?.[1];
    if (event !== undefined) controls.push(event);
    else if (id !== undefined && data !== undefined) {
      messages.push({ id: Number(id), data: JSON.parse(data) });
    }
  }
  return { messages, controls };
}

describe("GET /tasks/:runId/events", () => {
  it("serves a run's events as Server-Sent Events, resumable with Last-Event-ID", async () => {
    const started = await call("POST", "/tasks/demo.count@v1", { input: { steps: 2 } });
    const runId = started.body.runId as string;
    // Read while the run goes on: the body replays, tails, and ends with the settlement.
    const response = await exports.default.fetch(`${base}/tasks/${runId}/events`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const all = frames(await response.text());
    expect(all.messages.map((m) => m.data.type)).toEqual([
      "task:accepted",
      "task:attempt:started",
      "task:step:completed",
      "task:step:completed",
      "task:completed",
    ]);
    expect(all.messages.map((m) => m.id)).toEqual([0, 1, 2, 3, 4]);
    expect(all.messages.every((m) => m.data.seq === m.id)).toBe(true);
    expect(all.controls.at(-1)).toBe("done");

    // A client that saw up to id 2 gets the rest once.
    const resumed = await exports.default.fetch(`${base}/tasks/${runId}/events`, {
      headers: { "Last-Event-ID": "2" },
    });
    expect(frames(await resumed.text()).messages).toEqual(all.messages.slice(3));

    const missing = await exports.default.fetch(`${base}/tasks/nope-${runId}/events`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "tasks/not-found" } });
  });
});

describe("/v1/stream/runs/:runId (a run's events through the Durable Streams protocol)", () => {
  it("reads a run's events as a JSON stream, closed once the run settled, and refuses writes", async () => {
    const started = await call("POST", "/tasks/demo.count@v1", { input: { steps: 2 } });
    const runId = started.body.runId as string;
    await settled(runId);
    const path = `${base}/v1/stream/runs/${runId}`;
    const read = await exports.default.fetch(`${path}?offset=-1`);
    expect(read.status).toBe(200);
    expect(read.headers.get("content-type")).toBe("application/json");
    expect(read.headers.get("stream-closed")).toBe("true");
    const events = (await read.json()) as Array<{ seq: number; type: string; runId: string }>;
    expect(events.map((e) => e.type)).toEqual([
      "task:accepted",
      "task:attempt:started",
      "task:step:completed",
      "task:step:completed",
      "task:completed",
    ]);
    expect(events.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    // The same as the SSE route's, from the same log: a later offset reads the rest.
    const next = read.headers.get("stream-next-offset") as string;
    const head = await exports.default.fetch(path, { method: "HEAD" });
    expect(head.headers.get("stream-next-offset")).toBe(next);
    const sse = await (await exports.default.fetch(`${path}?offset=-1&live=sse`)).text();
    expect(sse).toContain('"streamClosed":true');
    expect(sse).toContain('"type":"task:completed"');
    const write = await exports.default.fetch(path, { method: "POST", body: "[]" });
    expect(write.status).toBe(405);
    expect((await exports.default.fetch(`${base}/v1/stream/runs/nope-${runId}`)).status).toBe(404);
  });
});

describe("flow control and schedule routes", () => {
  it("runs demo.serial@v1 one per key at a time: the second run of a key waits queued", async () => {
    const first = await call("POST", "/tasks/demo.serial@v1", { input: { key: "k1", ms: 300 } });
    const second = await call("POST", "/tasks/demo.serial@v1", { input: { key: "k1" } });
    const other = await call("POST", "/tasks/demo.serial@v1", { input: { key: "k2" } });
    expect(first.body.state).toBe("running");
    expect(second.body.state).toBe("queued");
    expect(other.body.state).not.toBe("queued");
    const queued = await call("GET", `/tasks/${second.body.runId}`);
    expect(queued.body).toMatchObject({ state: "queued", reason: "concurrency", key: "k1" });
    expect(await settled(second.body.runId as string)).toMatchObject({
      state: "completed",
      result: { key: "k1" },
    });
    // The second started only once the first had settled.
    const firstDone = await call("GET", `/tasks/${first.body.runId}`);
    const secondDone = await call("GET", `/tasks/${second.body.runId}`);
    expect(firstDone.body.state).toBe("completed");
    const stepsOf = (body: Record<string, unknown>) => body.steps as Array<{ updatedAt: number }>;
    expect(stepsOf(secondDone.body)[0]?.updatedAt).toBeGreaterThanOrEqual(
      stepsOf(firstDone.body)[0]?.updatedAt as number,
    );
    const refused = await call("POST", "/tasks/demo.serial@v1", { input: { key: "" } });
    expect(refused).toMatchObject({ status: 400, body: { error: { code: "demo/invalid-input" } } });
  });

  it("adds a one-minute schedule whose tick starts a demo.tick@v1 run, lists it, and removes it", async () => {
    const added = await call("POST", "/schedules", { id: "every-minute", cron: "* * * * *" });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      scheduleId: "every-minute",
      definition: "demo.tick@v1",
      source: "api",
      lastTickAt: null,
    });
    const nextTick = added.body.nextTickAt as number;
    expect(nextTick - Date.now()).toBeLessThanOrEqual(60_000);
    // The tick comes from the workspace's alarm: bring it to now instead of waiting a minute.
    const stub = env.WORKSPACE.getByName(WORKSPACE_NAME);
    await runInDurableObject(stub, (_, ctx) => {
      ctx.storage.sql.exec(
        "UPDATE dk_tasks_schedules SET next_at = ? WHERE schedule_id = 'every-minute'",
        nextTick - 60_000,
      );
    });
    await runDurableObjectAlarm(stub);
    const listed = await call("GET", "/schedules");
    const [schedule] = listed.body.items as Array<Record<string, unknown>>;
    expect(schedule).toMatchObject({ scheduleId: "every-minute", lastTickAt: nextTick - 60_000 });
    const run = await settled(schedule?.lastRunId as string);
    expect(run).toMatchObject({
      state: "completed",
      definition: "demo.tick@v1",
      metadata: { schedule: "every-minute", tickAt: nextTick - 60_000 },
    });
    const bad = await call("POST", "/schedules", { id: "bad", cron: "every minute" });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: "tasks/invalid-argument" } } });
    expect(await call("POST", "/schedules/every-minute/delete", {})).toMatchObject({
      status: 200,
      body: { deleted: true },
    });
    expect((await call("GET", "/schedules")).body.items).toEqual([]);
  });
});
