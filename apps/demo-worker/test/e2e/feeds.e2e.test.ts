import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poll } from "./poll.ts";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));
const EVENTS = 1_000;
const STREAM = "feed/e2e";

type FeedRun = {
  runId: string;
  state: string;
  result?: { source: string; from: number; to: number; count: number; first: { n: number } };
};

/** Every run of the feed, following pages (reads that fail while the server restarts answer undefined). */
async function feedRuns(dev: WranglerDev): Promise<{ runs: FeedRun[]; acked: string } | undefined> {
  try {
    const runs: FeedRun[] = [];
    let cursor: string | null = null;
    let acked = "";
    do {
      const query: string = cursor === null ? "" : `?cursor=${encodeURIComponent(cursor)}`;
      const response = await fetch(`${dev.url}/feeds${query}`);
      if (!response.ok) return undefined;
      const body = (await response.json()) as {
        subscription: { streams: { path: string; acked_offset: string }[] };
        runs: { items: FeedRun[]; next: string | null };
      };
      acked = body.subscription.streams.find((s) => s.path === STREAM)?.acked_offset ?? "";
      runs.push(...body.runs.items);
      cursor = body.runs.next;
    } while (cursor !== null);
    return { runs, acked };
  } catch {
    return undefined;
  }
}

describe("a stream append wakes a task, exactly once, under wrangler dev", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("appends 1,000 events through two SIGKILLs and the feed's task runs once per batch, covering every event once", async () => {
    expect((await fetch(`${dev.url}/feeds`, { method: "POST" })).status).toBe(200);
    const created = await fetch(`${dev.url}/v1/stream/${STREAM}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
    });
    expect(created.status).toBe(201);
    // Appends of 1–5 events by one idempotent producer: an append retried after a lost answer is
    // stored once. The server is killed after 300 and after 700 events.
    let n = 0;
    let seq = 0;
    const kills = [300, 700];
    while (n < EVENTS) {
      const size = Math.min(1 + (seq % 5), EVENTS - n);
      const events = Array.from({ length: size }, (_, i) => ({ n: n + i }));
      for (let attempt = 0; ; attempt++) {
        const answer = await fetch(`${dev.url}/v1/stream/${STREAM}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "Producer-Id": "e2e",
            "Producer-Epoch": "0",
            "Producer-Seq": String(seq),
          },
          body: JSON.stringify(events),
        }).catch(() => null);
        if (answer !== null && answer.status < 300) break;
        expect(attempt).toBeLessThan(100);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      n += size;
      seq += 1;
      if (kills.length > 0 && n >= (kills[0] as number)) {
        kills.shift();
        await dev.kill();
        dev = await dev.restart();
      }
    }
    const done = await poll(
      async () => {
        const feed = await feedRuns(dev);
        if (feed === undefined) return undefined;
        const taken = feed.runs
          .filter((run) => run.state === "completed")
          .reduce((sum, run) => sum + (run.result?.count ?? 0), 0);
        return taken === EVENTS &&
          feed.acked === `${String(EVENTS).padStart(16, "0")}_${"0".repeat(16)}`
          ? feed
          : undefined;
      },
      120_000,
      "the feed's runs to take all 1,000 events",
    );
    const batches = done.runs
      .map((run) => run.result as NonNullable<FeedRun["result"]>)
      .sort((a, b) => a.from - b.from);
    // Every run completed; its batch was what the stream held there; the batches tile 0–1000.
    expect(done.runs.every((run) => run.state === "completed")).toBe(true);
    let next = 0;
    for (const batch of batches) {
      expect(batch.from).toBe(next);
      expect(batch.count).toBe(batch.to - batch.from);
      expect(batch.first.n).toBe(batch.from);
      next = batch.to;
    }
    expect(next).toBe(EVENTS);
    console.log("FEED", JSON.stringify({ events: EVENTS, runs: batches.length, kills: 2 }));
  }, 300_000);
});
