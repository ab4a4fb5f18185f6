import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

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
