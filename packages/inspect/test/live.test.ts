import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { liveEvents } from "./fixtures/worker";
import { events, freshStub, get, inFixture } from "./helpers";

const live = (view: string) => `/inspect/api/live?view=${encodeURIComponent(view)}`;

/** The live-feed events of `view` reported since `from`. */
const reported = (view: string, from = 0) => liveEvents.slice(from).filter((e) => e.view === view);

describe("live feeds end", () => {
  it("ends the feed of a settled run with end (final) after its one view, and reads it no more", async () => {
    const stub = freshStub();
    const runId = await inFixture(
      async ({ tasks }) => (await tasks.run("doomed@v1", { reason: "r" })).runId,
      stub,
    );
    const mark = liveEvents.length;
    const seen = await events(await get(stub, live(`/runs/${runId}`)), (s) =>
      s.some((e) => e.event === "end"),
    );
    expect(seen.map((e) => e.event)).toEqual(["view", "end"]);
    expect(seen[1]?.data).toEqual({ reason: "final" });
    expect(seen[0]?.data).toMatchObject({ status: 200, body: { run: { state: "failed" } } });
    await scheduler.wait(100);
    const mine = reported(`/runs/${runId}`, mark);
    expect(mine.filter((e) => e.type === "inspect:live:read")).toHaveLength(1);
    expect(mine.at(-1)).toMatchObject({ type: "inspect:live:ended", reason: "final", reads: 1 });
  });

  it("reads a live run's view when the run's events move, not on a timer", async () => {
    const stub = freshStub();
    const runId = await inFixture(
      async ({ tasks }) => (await tasks.run("approval@v1")).runId,
      stub,
    );
    await scheduler.wait(50);
    const mark = liveEvents.length;
    const response = await get(stub, live(`/runs/${runId}`));
    const deliver = (async () => {
      // Quiet for 400 ms: a timer every 20 ms (the fixture's liveIntervalMs) would read 20 times.
      await scheduler.wait(400);
      expect(
        reported(`/runs/${runId}`, mark).filter((e) => e.type === "inspect:live:read"),
      ).toHaveLength(1);
      await runInDurableObject(stub, async ({ tasks }) => {
        await tasks.sendEvent(runId, "approve", { by: "ops" });
      });
    })();
    const seen = await events(response, (s) => s.some((e) => e.event === "end"), 5_000);
    await deliver;
    const views = seen.filter((e) => e.event === "view");
    expect(views[0]).toMatchObject({ data: { body: { run: { state: "waiting" } } } });
    expect(views.at(-1)).toMatchObject({ data: { body: { run: { state: "completed" } } } });
    expect(seen.at(-1)).toEqual({ event: "end", data: { reason: "final" } });
    // One read at the start, then one per change the run's events announced (a few at most).
    const reads = reported(`/runs/${runId}`, mark).filter((e) => e.type === "inspect:live:read");
    expect(reads.length).toBeLessThanOrEqual(5);
  });

  it("ends a stream's feed when the stream closes, after the view that shows it closed", async () => {
    const stub = freshStub();
    await runInDurableObject(stub, ({ streams }) => {
      streams.open("open").append({ n: 1 });
    });
    const response = await get(stub, live("/streams/open"));
    const close = (async () => {
      await scheduler.wait(150);
      await runInDurableObject(stub, ({ streams }) => {
        const writer = streams.open("open");
        writer.append({ n: 2 });
        writer.close();
      });
    })();
    const seen = await events(response, (s) => s.some((e) => e.event === "end"), 5_000);
    await close;
    const views = seen.filter((e) => e.event === "view");
    expect(views[0]).toMatchObject({
      data: { body: { stream: { state: "streaming", cursor: 1 } } },
    });
    expect(views.at(-1)).toMatchObject({
      data: { body: { stream: { state: "completed", cursor: 2 } } },
    });
    expect(seen.at(-1)).toEqual({ event: "end", data: { reason: "final" } });
  });

  it("answers HEAD of a live route at once, reading nothing", async () => {
    const stub = freshStub();
    const mark = liveEvents.length;
    const head = await get(stub, live("/overview"), {
      method: "HEAD",
      headers: { "x-inspect-token": "let-me-in" },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await head.text()).toBe("");
    await scheduler.wait(100);
    expect(reported("/overview", mark)).toEqual([]);
    // HEAD of a JSON view: its status, no body.
    const missing = await get(stub, "/inspect/api/runs/nope", {
      method: "HEAD",
      headers: { "x-inspect-token": "let-me-in" },
    });
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe("");
  });

  it("stops reading a feed its client dropped", async () => {
    const stub = freshStub();
    const mark = liveEvents.length;
    const controller = new AbortController();
    const response = await get(stub, live("/overview"), {
      headers: { "x-inspect-token": "let-me-in" },
      signal: controller.signal,
    });
    await events(response, (s) => s.some((e) => e.event === "view"));
    controller.abort();
    // Within a few reads (every 20 ms here) the feed notices, then reads nothing more.
    await scheduler.wait(300);
    const ended = reported("/overview", mark).find((e) => e.type === "inspect:live:ended");
    expect(ended).toMatchObject({ reason: "disconnected" });
    const reads = reported("/overview", mark).filter((e) => e.type === "inspect:live:read").length;
    await scheduler.wait(300);
    expect(reported("/overview", mark).filter((e) => e.type === "inspect:live:read")).toHaveLength(
      reads,
    );
  });

  it("keeps an overview's feed open until maxLiveMs, and says so when it ends", async () => {
    const stub = freshStub();
    const seen = await events(
      await get(stub, live("/overview")),
      (s) => s.some((e) => e.event === "end"),
      5_000,
    );
    expect(seen.at(-1)).toEqual({ event: "end", data: { reason: "max-live" } });
  });
});

describe("the page in a browser", () => {
  it("carries the query string of its own URL on its script and style, escaped for its attributes", async () => {
    const stub = freshStub();
    const html = await (await get(stub, "/inspect/?token=a%26b%22c&x=1")).text();
    expect(html).toContain(
      '<script type="module" src="/inspect/inspect.js?token=a%26b%22c&amp;x=1">',
    );
    expect(html).toContain(
      '<link rel="stylesheet" href="/inspect/inspect.css?token=a%26b%22c&amp;x=1">',
    );
    const js = await (await get(stub, "/inspect/inspect.js")).text();
    // Its fetch and EventSource calls carry it too, and it listens for the feed's end.
    expect(js).toMatch(/fetch\(carry\(/);
    expect(js).toMatch(/new EventSource\(carry\(/);
    expect(js).toContain('addEventListener("end"');
  });
});
