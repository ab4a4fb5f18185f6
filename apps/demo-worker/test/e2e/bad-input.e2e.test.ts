import { afterEach, describe, expect, inject, it } from "vitest";
import { poll } from "./poll.ts";
import { expectCoded, postJson, rawRequest, sendLargeBody, workerdRss } from "./requests.ts";

/** `depth` nested arrays around a 1. */
function nested(depth: number): string {
  return `${"[".repeat(depth)}1${"]".repeat(depth)}`;
}

describe("the demo's HTTP surface refuses bad input under wrangler dev", () => {
  const dev = inject("sharedDemo");
  afterEach(async () => {
    // Every refusal leaves the server healthy.
    const health = await fetch(`${dev.url}/health`);
    expect(health.status).toBe(200);
  });

  const get = (path: string, init?: RequestInit) => fetch(`${dev.url}${path}`, init);

  it("answers 400 demo/bad-path for bad percent-encoding in any path parameter", async () => {
    for (const path of ["/tasks/%ZZ", "/v1/stream/%ZZ", "/streams/%ZZ/sse", "/programs/%E0%A4%A"]) {
      await expectCoded(await get(path), 400, "demo/bad-path");
    }
    await expectCoded(await postJson(dev, "/tasks/%ZZ/events/approve", {}), 400, "demo/bad-path");
  });

  it("refuses JSON nested 10,000 levels in a task input or event payload with 400 demo/too-deep, storing nothing", async () => {
    const runId = `deep-${crypto.randomUUID()}`;
    const start = await postJson(
      dev,
      "/tasks/demo.approval@v1",
      `{"runId":"${runId}","input":${nested(10_000)}}`,
    );
    await expectCoded(start, 400, "demo/too-deep");
    await expectCoded(await get(`/tasks/${runId}`), 404, "tasks/not-found");

    const waiting = `waits-${crypto.randomUUID()}`;
    expect((await postJson(dev, "/tasks/demo.approval@v1", { runId: waiting })).status).toBe(202);
    await expectCoded(
      await postJson(dev, `/tasks/${waiting}/events/approve`, nested(10_000)),
      400,
      "demo/too-deep",
    );
    const run = (await (await get(`/tasks/${waiting}`)).json()) as { state: string };
    expect(run.state).not.toBe("completed");
    await postJson(dev, `/tasks/${waiting}/cancel`, {});
  });

  it("returns a program's BigInt, Map, Set, bytes, Error and RegExp results in the codec's JSON form, on POST and on every later GET", async () => {
    const code = `export default async () => ({
      big: 10n ** 30n, map: new Map([["a", 1]]), set: new Set([2]), bytes: new Uint8Array([1, 2]),
      error: new RangeError("r"), re: /x/g, plain: [1, "two"] })`;
    const response = await postJson(dev, "/programs", { code });
    expect(response.status).toBe(200);
    const execution = (await response.json()) as {
      executionId: string;
      state: string;
      result: Record<string, unknown>;
      resultMeta: unknown;
    };
    expect(execution.state).toBe("completed");
    expect(execution.result).toMatchObject({
      big: "1000000000000000000000000000000",
      map: [["a", 1]],
      set: [2],
      bytes: "AQI=",
      re: "/x/g",
      plain: [1, "two"],
    });
    expect(execution.resultMeta).toBeTruthy();
    for (let i = 0; i < 2; i++) {
      const again = await get(`/programs/${execution.executionId}`);
      expect(again.status).toBe(200);
      expect(await again.json()).toMatchObject({
        result: execution.result,
        resultMeta: execution.resultMeta,
      });
    }
  });

  it("refuses a lone surrogate in a run id, idempotency key or execution id at the door, and its retry the same way", async () => {
    for (const field of ["runId", "idempotencyKey"]) {
      for (let attempt = 0; attempt < 2; attempt++) {
        const response = await postJson(
          dev,
          "/tasks/demo.approval@v1",
          `{"${field}":"bad\\ud800name"}`,
        );
        await expectCoded(response, 400, "tasks/invalid-argument");
      }
    }
    await expectCoded(
      await postJson(dev, "/programs", '{"code":"export default () => 1","id":"x\\udc00"}'),
      400,
      "demo/bad-request",
    );
  });

  it("checks timeoutMs, the stream id and the cancel reason when a run starts, with a coded 400", async () => {
    for (const timeoutMs of [-1, 0, 1e15, 1.5]) {
      const runId = `timeout-${crypto.randomUUID()}`;
      await expectCoded(
        await postJson(dev, "/tasks/demo.approval@v1", { runId, input: { timeoutMs } }),
        400,
        "demo/invalid-input",
      );
      await expectCoded(await get(`/tasks/${runId}`), 404, "tasks/not-found");
    }
    const runId = `long-stream-${crypto.randomUUID()}`;
    await expectCoded(
      await postJson(dev, "/tasks/demo.count@v1", {
        runId,
        input: { steps: 1, stream: "s".repeat(257) },
      }),
      400,
      "demo/invalid-input",
    );
    await expectCoded(await get(`/tasks/${runId}`), 404, "tasks/not-found");

    const waiting = `cancel-${crypto.randomUUID()}`;
    expect((await postJson(dev, "/tasks/demo.approval@v1", { runId: waiting })).status).toBe(202);
    await expectCoded(
      await postJson(dev, `/tasks/${waiting}/cancel`, { reason: "r".repeat(100_000) }),
      400,
      "demo/bad-request",
    );
    const run = (await (await get(`/tasks/${waiting}`)).json()) as { state: string };
    expect(run.state).not.toBe("cancelled");
    expect((await postJson(dev, `/tasks/${waiting}/cancel`, { reason: "done" })).status).toBe(200);
  });

  it("deletes a run's buffered events when it settles: 200 events of 60 KB, then approval, leave nothing", async () => {
    const runId = `buffered-${crypto.randomUUID()}`;
    expect((await postJson(dev, "/tasks/demo.approval@v1", { runId })).status).toBe(202);
    const payload = { blob: "x".repeat(60_000) };
    for (let i = 0; i < 200; i++) {
      const sent = await postJson(dev, `/tasks/${runId}/events/noise`, payload);
      expect(await sent.json()).toEqual({ result: "buffered" });
    }
    const buffered = await get(`/debug/executions/${runId}/buffered-events`);
    expect(((await buffered.json()) as { count: number }).count).toBe(200);

    expect(await (await postJson(dev, `/tasks/${runId}/events/approve`, { ok: 1 })).json()).toEqual(
      {
        result: "delivered",
      },
    );
    await poll(
      async () => {
        const run = (await (await get(`/tasks/${runId}`)).json()) as { state: string };
        return run.state === "completed" ? true : undefined;
      },
      30_000,
      "the approved run to complete",
    );
    expect(await (await get(`/debug/executions/${runId}/buffered-events`)).json()).toEqual({
      count: 0,
      bytes: 0,
    });
  });

  it("answers the demo's own 404s as coded JSON: unknown runs on /debug/executions, unknown streams on /streams/:id/sse", async () => {
    await expectCoded(await get("/debug/executions/unknown"), 404, "tasks/not-found");
    await expectCoded(await get("/streams/unknown/sse"), 404, "demo/stream-not-found");
  });

  it("refuses a 100 MB body with 413 unread, on the demo's routes and the protocol's, with a bounded workerd memory increase", async () => {
    const stream = `/v1/stream/big-${crypto.randomUUID()}`;
    expect(
      (await get(stream, { method: "PUT", headers: { "Content-Type": "application/json" } }))
        .status,
    ).toBe(201);
    const before = workerdRss(dev);
    const answers: string[] = [];
    const cases = [
      { method: "POST", path: "/tasks/demo.approval@v1", contentType: "application/json" },
      { method: "POST", path: "/programs", contentType: "application/json" },
      { method: "POST", path: stream, contentType: "application/json" },
      { method: "PUT", path: `${stream}-new`, contentType: "application/json" },
    ];
    for (const target of cases) {
      for (const declareLength of [true, false]) {
        const { status, body } = await sendLargeBody(dev, {
          ...target,
          totalBytes: 100 * 1_048_576,
          declareLength,
        });
        // The server stops reading at the limit and answers 413. Under `wrangler dev`, miniflare's
        // entry worker, still forwarding the rest of the upload, may instead cut the connection (0)
        // or answer its own 500 ("Network connection lost" from miniflare's entry.worker.js); the
        // demo's Worker never answers 500.
        const proxyFailed =
          status === 500 && body.includes("Network connection lost") && body.includes("miniflare");
        answers.push(proxyFailed ? "dev-proxy-500" : String(status));
        if (status !== 413) {
          expect({ ...target, declareLength, status, proxyFailed }).toMatchObject({
            status: proxyFailed ? 500 : 0,
          });
        }
      }
    }
    const after = workerdRss(dev);
    const grownMb = (after - before) / 1_048_576;
    console.log(
      `workerd RSS before ${(before / 1_048_576).toFixed(1)} MB, after 8 × 100 MB bodies ${(after / 1_048_576).toFixed(1)} MB (+${grownMb.toFixed(1)} MB); answers ${answers.join(" ")}`,
    );
    expect(before).toBeGreaterThan(0);
    expect(grownMb).toBeLessThan(64);
    // Nothing was stored: the protocol stream is still empty and the new one was never created.
    expect(await (await get(`${stream}?offset=-1`)).json()).toEqual([]);
    expect((await get(`${stream}-new`)).status).toBe(404);
  });

  it("refuses a JSON append of 500k messages with the protocol's 413 and appends nothing", async () => {
    const stream = `/v1/stream/many-${crypto.randomUUID()}`;
    expect(
      (await get(stream, { method: "PUT", headers: { "Content-Type": "application/json" } }))
        .status,
    ).toBe(201);
    const body = `[${Array.from({ length: 500_000 }, () => "1").join(",")}]`;
    const started = Date.now();
    const response = await get(stream, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body,
    });
    expect(response.status).toBe(413);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(await (await get(`${stream}?offset=-1`)).json()).toEqual([]);
    // A bounded batch still goes through.
    const ok = await get(stream, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: `[${Array.from({ length: 1_000 }, (_, i) => i).join(",")}]`,
    });
    expect(ok.status).toBe(204);
  });

  it("refuses JSON routes without Content-Type: application/json (a cross-site form post), running nothing", async () => {
    const before = await (await get("/debug/jobs")).json();
    const code =
      'import { createJob } from "codemode:jobs"; export default async () => (await createJob({ name: "x" })).info()';
    for (const contentType of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
    ]) {
      for (const path of ["/programs", "/tasks/demo.approval@v1"]) {
        const response = await get(path, {
          method: "POST",
          headers: { "Content-Type": contentType },
          body: JSON.stringify({ code, runId: `form-${crypto.randomUUID()}` }),
        });
        await expectCoded(response, 415, "demo/unsupported-media-type");
      }
    }
    expect(await (await get("/debug/jobs")).json()).toEqual(before);
  });

  it("refuses a foreign Origin on mutating routes and a foreign Host on every route", async () => {
    const runId = `origin-${crypto.randomUUID()}`;
    await expectCoded(
      await postJson(dev, "/tasks/demo.approval@v1", { runId }, { Origin: "https://evil.example" }),
      403,
      "demo/forbidden-origin",
    );
    await expectCoded(await get(`/tasks/${runId}`), 404, "tasks/not-found");
    // The server's own origin is fine.
    expect(
      (await postJson(dev, "/tasks/demo.approval@v1", { runId }, { Origin: dev.url })).status,
    ).toBe(202);
    await postJson(dev, `/tasks/${runId}/cancel`, {});

    const rebound = `rebound-${crypto.randomUUID()}`;
    const answer = await rawRequest(dev, {
      method: "POST",
      path: "/tasks/demo.approval@v1",
      headers: { Host: `evil.example:${dev.port}`, "Content-Type": "application/json" },
      body: JSON.stringify({ runId: rebound }),
    });
    expect(answer.status).toBe(421);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "demo/forbidden-host" } });
    const read = await rawRequest(dev, {
      method: "GET",
      path: "/health",
      headers: { Host: "evil.example" },
    });
    expect(read.status).toBe(421);
    await expectCoded(await get(`/tasks/${rebound}`), 404, "tasks/not-found");
  });
});
