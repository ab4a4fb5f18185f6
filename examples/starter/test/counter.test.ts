import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("the starter Worker", () => {
  it("starts a task that writes a stream, which SSE serves once per chunk, ending with done", async () => {
    const started = await exports.default.fetch("http://starter/count", {
      method: "POST",
      body: JSON.stringify({ steps: 3 }),
    });
    expect(started.status).toBe(202);
    const { stream } = (await started.json()) as { runId: string; stream: string };

    const sse = await exports.default.fetch(`http://starter/streams/${encodeURIComponent(stream)}`);
    expect(sse.status).toBe(200);
    expect(sse.headers.get("content-type")).toMatch(/^text\/event-stream/);
    // The body ends when the task closes the stream.
    const text = await sse.text();
    const data = text
      .split("\n")
      .filter((line) => line.startsWith('data: {"i"'))
      .map((line) => JSON.parse(line.slice("data: ".length)));
    expect(data).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    expect(text).toContain("event: done");
  });

  it("refuses a count that is not an integer from 0 to 1000, saying what it got", async () => {
    const refused = await exports.default.fetch("http://starter/count", {
      method: "POST",
      body: JSON.stringify({ steps: "three" }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      error: '"steps" must be an integer from 0 to 1000; got "three"',
    });
    const slow = await exports.default.fetch("http://starter/count", {
      method: "POST",
      body: JSON.stringify({ steps: 1, delayMs: -1 }),
    });
    expect(slow.status).toBe(400);
    expect(await slow.json()).toEqual({
      error: '"delayMs" must be an integer from 0 to 10000; got -1',
    });
  });

  it("shows a run's state and each step's attempts at GET /count/:runId", async () => {
    const started = await exports.default.fetch("http://starter/count", {
      method: "POST",
      body: JSON.stringify({ steps: 2, delayMs: 10 }),
    });
    const { runId } = (await started.json()) as { runId: string };
    let status: { state: string; steps: { name: string; state: string; attempt: number }[] };
    for (;;) {
      status = await (await exports.default.fetch(`http://starter/count/${runId}`)).json();
      if (status.state === "completed") break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(status.steps).toEqual([
      { name: "chunk-0", state: "completed", attempt: 1 },
      { name: "chunk-1", state: "completed", attempt: 1 },
      { name: "close", state: "completed", attempt: 1 },
    ]);
    expect((await exports.default.fetch("http://starter/count/nope")).status).toBe(404);
  });
});
