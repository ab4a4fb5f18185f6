import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

/** The Debian package's Chromium (installed by `.ci/run` when missing); never a downloaded browser. */
const CHROMIUM = "/usr/bin/chromium";

type Feeds = { reads: number; ended: { final: number; "max-live": number; disconnected: number } };

/** The page's requests (path and query) and the answers of 400 and up it got. */
function watch(page: Page) {
  const requests: string[] = [];
  const failures: string[] = [];
  const problems: string[] = [];
  page.on("request", (request) => {
    const url = new URL(request.url());
    requests.push(url.pathname + url.search);
  });
  page.on("response", (response) => {
    if (response.status() >= 400) failures.push(`${response.status()} ${response.url()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  return { requests, failures, problems };
}

describe("the inspector's feeds and page under wrangler dev, in headless Chromium", () => {
  const dev = inject("sharedDemo");
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox"],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  const feeds = async (): Promise<Feeds> =>
    (await (await fetch(`${dev.url}/debug/inspect/feeds`)).json()) as Feeds;

  it("ends a settled run's feed: the page says final and asks the object nothing more", async () => {
    const runId = `final-${Date.now()}`;
    const started = await fetch(`${dev.url}/tasks/demo.count@v1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ runId, input: { steps: 3, stepMs: 200 } }),
    });
    expect(started.status).toBe(202);
    const page = await browser.newPage();
    const seen = watch(page);
    await page.goto(`${dev.url}/inspect/#/runs/${runId}`);
    await page.waitForSelector('#detail-view[data-state="completed"]', { timeout: 30_000 });
    await page.locator("#live", { hasText: "final" }).waitFor({ timeout: 10_000 });
    const before = seen.requests.length;
    const reads = (await feeds()).reads;
    await page.waitForTimeout(3_000);
    // No reconnect, no poll: the tab left open costs the object nothing.
    expect(seen.requests.slice(before)).toEqual([]);
    expect((await feeds()).reads).toBe(reads);
    // The run's life is said in words; no bar fills the width without saying what it measures.
    expect(await page.textContent("#detail-life")).toMatch(/^created .* · lived .* · settled /);
    expect(await page.isVisible("#detail-bar")).toBe(false);
    expect(seen.problems).toEqual([]);
    await page.close();
  });

  it("stops reading a feed whose client went away, and answers HEAD of a feed at once", async () => {
    const before = await feeds();
    const controller = new AbortController();
    const response = await fetch(`${dev.url}/inspect/api/live?view=/overview`, {
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    while (!text.includes("event: view")) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    await reader.cancel().catch(() => {});
    // The feed writes a comment on every unchanged read: the first writes after the client left
    // fail through wrangler's proxy, and the feed stops (within a few reads, 1 s apart).
    let dropped = await feeds();
    for (let i = 0; i < 50 && dropped.ended.disconnected === before.ended.disconnected; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      dropped = await feeds();
    }
    expect(dropped.ended.disconnected).toBeGreaterThan(before.ended.disconnected);
    expect(dropped.reads - before.reads).toBeLessThanOrEqual(8);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    // Nothing reads for the dropped client any more (no other feed is open).
    expect((await feeds()).reads).toBe(dropped.reads);

    const head = await fetch(`${dev.url}/inspect/api/live?view=/overview`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect((await feeds()).reads).toBe(dropped.reads);
  });

  it("shows a step that backed off as ran over its span, its ran part drawn apart", async () => {
    const runId = `backoff-${Date.now()}`;
    const started = await fetch(`${dev.url}/tasks/demo.flaky@v1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ runId, input: { failures: 1, retryMs: 800 } }),
    });
    expect(started.status).toBe(202);
    const page = await browser.newPage();
    const seen = watch(page);
    await page.goto(`${dev.url}/inspect/#/runs/${runId}`);
    await page.waitForSelector('#detail-view[data-state="completed"]', { timeout: 30_000 });
    const took = await page.$$eval("#detail-steps tbody tr", (trs) =>
      trs.map((tr) => [tr.cells[1]?.textContent, tr.cells[5]?.textContent]),
    );
    // charge failed once, backed off 800 ms and ran again: it ran far less than its span.
    expect(took[0]?.[0]).toBe("charge");
    const [, ran, span] = /^ran (.+) over (.+)$/.exec(took[0]?.[1] ?? "") ?? [];
    expect(ran, took[0]?.[1] ?? "").toBeDefined();
    const ms = (text: string) =>
      text.endsWith(" ms") ? Number.parseFloat(text) : Number.parseFloat(text) * 1000;
    expect(ms(span as string)).toBeGreaterThanOrEqual(800);
    expect(ms(ran as string)).toBeLessThan(ms(span as string) - 500);
    const bar = page.locator('#detail-timeline .step[data-step="charge"]');
    expect(await bar.getAttribute("class")).toContain("waited");
    expect(await bar.locator(".ran").count()).toBeGreaterThanOrEqual(2);
    expect(seen.problems).toEqual([]);
    await page.close();
  });

  it("opens a chat room's inspector for an id with : @ , = and asks only for the parts it has", async () => {
    const chatId = "room:a@b,c=d";
    const raw = await fetch(`${dev.url}/chat/${chatId}/inspect/?x=1`, { redirect: "manual" });
    expect(raw.status).toBe(308);
    expect(raw.headers.get("location")).toBe(
      `${dev.url}/chat/${encodeURIComponent(chatId)}/inspect/?x=1`,
    );
    const page = await browser.newPage();
    const seen = watch(page);
    await page.goto(`${dev.url}/chat/${chatId}/inspect/#/chats/${encodeURIComponent(chatId)}`);
    await page.waitForSelector("#counts .counts.streams");
    await page.waitForTimeout(500);
    expect(seen.failures).toEqual([]);
    expect(seen.requests.some((r) => r.includes("/api/runs"))).toBe(false);
    expect(await page.isVisible("#problem")).toBe(false);
    // Hidden means hidden: the run filter of a room without tasks, shown: its chat form.
    expect(await page.isVisible("#run-filter")).toBe(false);
    expect(await page.isVisible("#runs")).toBe(false);
    expect(await page.isVisible("#chat-form")).toBe(true);
    expect(await page.inputValue("#chat-id")).toBe(chatId);
    await page.close();

    // And the workspace, with no chat part, shows no chat form.
    const workspace = await browser.newPage();
    const there = watch(workspace);
    await workspace.goto(`${dev.url}/inspect/`);
    await workspace.waitForSelector("#counts .counts.runs");
    expect(await workspace.isVisible("#chat-form")).toBe(false);
    expect(await workspace.isVisible("#run-filter")).toBe(true);
    expect(there.failures).toEqual([]);
    await workspace.close();
  });
});
