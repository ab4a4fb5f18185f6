import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "./poll.ts";
import { expectCoded, postJson } from "./requests.ts";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

/** A page origin allowed by the dev config below, and one that is not. */
const APP_ORIGIN = "http://app.example:5173";
const OTHER_ORIGIN = "http://evil.example";

/** Reads an SSE body to its end (as `curl -N` does), failing after `timeoutMs`. */
async function readToEnd(response: Response, timeoutMs: number): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const timer = setTimeout(() => void reader.cancel(new Error("the body did not end")), timeoutMs);
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The `{ i }` data of each chunk frame of an SSE body, in order. */
function chunkValues(text: string): number[] {
  return [...text.matchAll(/^id: \d+\ndata: (.*)$/gm)].map(
    (match) => (JSON.parse(match[1] as string) as { i: number }).i,
  );
}

describe("the demo for a person under wrangler dev", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    dev = await startWranglerDev({
      cwd: demoDir,
      vars: { DEMO_DEBUG: "on", DEMO_ALLOWED_ORIGINS: APP_ORIGIN, DEMO_SSE_WAIT_MS: "3000" },
    });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("serves the page at / with its script and style from its own origin under a strict CSP", async () => {
    const page = await fetch(`${dev.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/page.js"></script>');
    for (const route of [
      "POST /tasks/:definition",
      "GET /streams/:id/sse",
      "POST /programs",
      "POST /chat",
    ]) {
      expect(html).toContain(route);
    }
    // No external asset: every src and href is this origin's own path.
    for (const match of html.matchAll(/(?:src|href)="([^"]+)"/g)) {
      expect(match[1]).toMatch(/^\/[a-z]/);
    }
    const script = await fetch(`${dev.url}/page.js`);
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await script.text()).toContain("new EventSource(");
    expect((await fetch(`${dev.url}/page.css`)).headers.get("content-type")).toBe(
      "text/css; charset=utf-8",
    );
  });

  it("ends a demo.count@v1 stream with event: done when the run completes, so the body ends", async () => {
    const stream = `done-${crypto.randomUUID()}`;
    const started = await postJson(dev, "/tasks/demo.count@v1", {
      input: { steps: 4, stepMs: 100, stream },
    });
    expect(started.status).toBe(202);
    const text = await readToEnd(await fetch(`${dev.url}/streams/${stream}/sse`), 30_000);
    expect(chunkValues(text)).toEqual([0, 1, 2, 3]);
    expect(text.endsWith("event: done\ndata: {}\n\n")).toBe(true);
    // A run with no steps opens and closes its stream too.
    const empty = `empty-${crypto.randomUUID()}`;
    await postJson(dev, "/tasks/demo.count@v1", { input: { steps: 0, stream: empty } });
    expect(await readToEnd(await fetch(`${dev.url}/streams/${empty}/sse`), 30_000)).toBe(
      "event: up-to-date\ndata: {}\n\nevent: done\ndata: {}\n\n",
    );
  });

  it("ends the stream of a cancelled run with event: error", async () => {
    const stream = `cancel-${crypto.randomUUID()}`;
    const started = await postJson(dev, "/tasks/demo.count@v1", {
      input: { steps: 50, stepMs: 300, stream },
    });
    const { runId } = (await started.json()) as { runId: string };
    const reading = fetch(`${dev.url}/streams/${stream}/sse`).then((r) => readToEnd(r, 30_000));
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect((await postJson(dev, `/tasks/${runId}/cancel`, { reason: "enough" })).status).toBe(200);
    const text = await reading;
    expect(text).toMatch(/event: error\ndata: \{"reason":"enough"\}\n\n$/);
    expect(chunkValues(text).length).toBeLessThan(50);
  });

  it("serves a subscriber who arrives before the stream exists, from the stream's first chunk", async () => {
    const stream = `early-${crypto.randomUUID()}`;
    // Subscribe first; the run that creates the stream starts a second later.
    const reading = fetch(`${dev.url}/streams/${stream}/sse`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const started = await postJson(dev, "/tasks/demo.count@v1", { input: { steps: 3, stream } });
    expect(started.status).toBe(202);
    const response = await reading;
    expect(response.status).toBe(200);
    expect(chunkValues(await readToEnd(response, 30_000))).toEqual([0, 1, 2]);
  });

  it("answers a stream still missing after the bounded wait with the demo's coded JSON 404", async () => {
    const began = Date.now();
    const response = await fetch(`${dev.url}/streams/never-${crypto.randomUUID()}/sse`);
    expect(Date.now() - began).toBeGreaterThanOrEqual(3_000);
    await expectCoded(response, 404, "demo/stream-not-found");
  });

  it("lets an allowed origin read /streams/:id/sse and answers its preflight; other origins get no access", async () => {
    const stream = `cors-${crypto.randomUUID()}`;
    await postJson(dev, "/tasks/demo.count@v1", { input: { steps: 1, stream } });
    const allowed = await fetch(`${dev.url}/streams/${stream}/sse`, {
      headers: { Origin: APP_ORIGIN },
    });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
    expect(allowed.headers.get("vary")).toBe("Origin");
    expect(chunkValues(await readToEnd(allowed, 30_000))).toEqual([0]);

    const missing = await fetch(`${dev.url}/streams/missing-${stream}/sse`, {
      headers: { Origin: APP_ORIGIN },
    });
    expect(missing.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
    await expectCoded(missing, 404, "demo/stream-not-found");

    const other = await fetch(`${dev.url}/streams/${stream}/sse`, {
      headers: { Origin: OTHER_ORIGIN },
    });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    await other.body?.cancel();

    const preflight = await fetch(`${dev.url}/streams/${stream}/sse`, {
      method: "OPTIONS",
      headers: {
        Origin: APP_ORIGIN,
        "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "last-event-id",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(APP_ORIGIN);
    expect(preflight.headers.get("access-control-allow-methods")).toBe("GET");
    expect(preflight.headers.get("access-control-allow-headers")).toBe("Last-Event-ID");
    const refused = await fetch(`${dev.url}/streams/${stream}/sse`, {
      method: "OPTIONS",
      headers: { Origin: OTHER_ORIGIN, "Access-Control-Request-Method": "GET" },
    });
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("says what was wrong with what was sent: the input sent without its wrapper, and each bad field", async () => {
    const bare = await postJson(dev, "/tasks/demo.count@v1", { steps: 3 });
    expect(bare.status).toBe(400);
    const { error } = (await bare.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("demo/bad-request");
    expect(error.message).toContain('{ "input": { … } }');
    expect(error.message).toContain('got "steps" at the top level');

    const cases: Array<[string, unknown, string, string]> = [
      ["/tasks/demo.count@v1", {}, "demo/invalid-input", 'got nothing as "input"'],
      [
        "/tasks/demo.count@v1",
        { input: { steps: -1 } },
        "demo/invalid-input",
        '"input.steps" must be an integer from 0 to 1000; got -1',
      ],
      [
        "/tasks/demo.count@v1",
        { input: { steps: 2, stepMs: "fast" } },
        "demo/invalid-input",
        '"input.stepMs" must be an integer from 0 to 60000 (milliseconds); got "fast"',
      ],
      [
        "/tasks/demo.count@v1",
        { input: { steps: 1, stream: "s".repeat(300) } },
        "demo/invalid-input",
        "got a string of 300 characters",
      ],
      [
        "/tasks/demo.approval@v1",
        { input: { timeoutMs: 0 } },
        "demo/invalid-input",
        '"input.timeoutMs" must be an integer from 1 to',
      ],
      [
        "/tasks/demo.approval@v1",
        { input: [1] },
        "demo/invalid-input",
        'got an array of 1 as "input"',
      ],
      [
        "/tasks/demo.count@v1",
        { input: { steps: 1 }, runId: 7 },
        "demo/bad-request",
        '"runId" must be a string; got 7',
      ],
      ["/tasks/demo.count@v1", [1, 2], "demo/bad-request", "got an array of 2"],
      ["/tasks/no-such-run/cancel", { why: "x" }, "demo/bad-request", 'got "why" at the top level'],
      [
        "/tasks/no-such-run/cancel",
        { reason: 5 },
        "demo/bad-request",
        '"reason" must be a string of at most 1000 characters; got 5',
      ],
      [
        "/programs",
        { source: "export default () => 1" },
        "demo/bad-request",
        'The body got "source" at the top level',
      ],
      ["/programs", { code: "" }, "demo/bad-request", '"code" must be a non-empty string; got ""'],
      [
        "/programs",
        { code: "export default () => 1", access: "all" },
        "demo/bad-request",
        '"access" must be "read" or "read-write"; got "all"',
      ],
      ["/chat", { messages: [] }, "demo/bad-chat", 'got nothing as "id"'],
    ];
    for (const [path, body, code, says] of cases) {
      const response = await postJson(dev, path, body);
      const answer = (await response.json()) as { error?: { code: string; message: string } };
      expect({ path, status: response.status, code: answer.error?.code }).toEqual({
        path,
        status: 400,
        code,
      });
      expect(answer.error?.message, path).toContain(says);
    }
  });

  it("refuses a new run on a stream an earlier run wrote, and lets a retry of that run join it", async () => {
    const stream = `taken-${crypto.randomUUID()}`;
    const key = `key-${stream}`;
    const first = await postJson(dev, "/tasks/demo.count@v1", {
      input: { steps: 2, stream },
      idempotencyKey: key,
    });
    expect(first.status).toBe(202);
    const { runId } = (await first.json()) as { runId: string };
    await poll(
      async () => ((await fetch(`${dev.url}/debug/streams/${stream}`)).ok ? true : undefined),
      30_000,
      "the stream to exist",
    );
    const second = await postJson(dev, "/tasks/demo.count@v1", { input: { steps: 2, stream } });
    await expectCoded(second, 409, "demo/stream-exists");
    const retry = await postJson(dev, "/tasks/demo.count@v1", {
      input: { steps: 2, stream },
      idempotencyKey: key,
    });
    expect(retry.status).toBe(200);
    expect(await retry.json()).toMatchObject({ runId, accepted: false });
    const byRunId = await postJson(dev, "/tasks/demo.count@v1", {
      input: { steps: 2, stream },
      runId,
    });
    expect(await byRunId.json()).toMatchObject({ runId, accepted: false });
  });
});
