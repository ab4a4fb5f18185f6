import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pageFiles } from "../../src/http/page.ts";

/** The Debian package's Chromium; never a downloaded browser. */
const CHROMIUM = "/usr/bin/chromium";
const ORIGIN = "http://inspect.test";
const BASE = "/inspect";

/** A run parked on a sleep after two steps. */
function waitingRun(state: string) {
  const created = 1_700_000_000_000;
  const step = (index: number, name: string) => ({
    index,
    name,
    kind: "do",
    state: "completed",
    attempts: 1,
    from: created + index,
    to: created + index + 1,
    ranMs: 1,
    wakeAt: null,
    result: index,
    error: null,
  });
  return {
    version: 1,
    run: {
      runId: "r 1",
      definition: "demo.steps@v1",
      state,
      attempts: 1,
      waitingFor: state === "waiting" ? "sleep" : null,
      eventType: null,
      wakeAt: null,
      statusMessage: null,
      error: null,
      idempotencyKey: null,
      createdAt: created,
      startedAt: created,
      settledAt: null,
    },
    input: null,
    attempts: [],
    steps: [step(0, "reserve"), step(1, "charge")],
    journals: [],
    children: [],
    // An earlier restart from "charge", which dropped its first result.
    restarts: [
      {
        restart: 1,
        from: "charge",
        at: created,
        attempt: 1,
        state: "failed",
        steps: [{ ...step(1, "charge"), result: "first charge" }],
      },
    ],
  };
}

interface Posted {
  path: string;
  contentType: string | null;
  body: unknown;
}

/** Serves the page (with or without controls) and a live feed of `view`; records every POST. */
async function serve(page: Page, view: unknown, controls: boolean): Promise<Posted[]> {
  const files = pageFiles(BASE, new URLSearchParams(), controls);
  const posted: Posted[] = [];
  await page.route(`${ORIGIN}/**`, async (route) => {
    const request = route.request();
    const url = new URL(request.url());
    if (request.method() === "POST") {
      posted.push({
        path: url.pathname,
        contentType: request.headers()["content-type"] ?? null,
        body: JSON.parse(request.postData() ?? "null"),
      });
      return route.fulfill({ status: 200, contentType: "application/json", body: "{}" });
    }
    if (url.pathname === `${BASE}/api/live`) {
      const body = `event: view\ndata: ${JSON.stringify({ status: 200, body: view })}\n\nevent: end\ndata: {"reason":"final"}\n\n`;
      return route.fulfill({ status: 200, contentType: "text/event-stream", body });
    }
    if (url.pathname.startsWith(`${BASE}/api/`)) {
      return route.fulfill({
        status: 200,
        contentType: "application/json",
        body: '{"items":[],"next":null}',
      });
    }
    const file = files.get(url.pathname.slice(BASE.length) || "/");
    if (file === undefined) return route.fulfill({ status: 404, body: "" });
    return route.fulfill({ status: 200, contentType: file.contentType, body: file.body });
  });
  return posted;
}

describe("the inspector page's run controls in headless Chromium", () => {
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

  it("posts pause and restart-from-a-step as JSON to the run's control routes", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    const posted = await serve(page, waitingRun("waiting"), true);
    await page.goto(`${ORIGIN}${BASE}/#/runs/r%201`);
    await page.waitForSelector('#detail-view[data-state="waiting"]', { timeout: 30_000 });
    expect(await page.locator("#detail-controls").isVisible()).toBe(true);
    expect(await page.locator("#control-resume").isDisabled()).toBe(true);
    expect(await page.locator("#control-from option").allTextContents()).toEqual([
      "reserve",
      "charge",
    ]);
    // The earlier history: the restart and the step it dropped, with its result.
    expect(await page.locator("#detail-restarts").isVisible()).toBe(true);
    const dropped = await page.locator("#detail-restarts tbody tr").allTextContents();
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toContain("charge");
    expect(dropped[0]).toContain("first charge");
    await page.click("#control-pause");
    await page.selectOption("#control-from", "charge");
    await page.click("#control-restart");
    await expect.poll(() => posted.length).toBe(2);
    expect(posted).toEqual([
      { path: `${BASE}/api/runs/r%201/pause`, contentType: "application/json", body: {} },
      {
        path: `${BASE}/api/runs/r%201/restart`,
        contentType: "application/json",
        body: { from: "charge" },
      },
    ]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("offers resume for a paused run, and no controls at all where the host gave none", async () => {
    const page = await browser.newPage();
    const posted = await serve(page, waitingRun("paused"), true);
    await page.goto(`${ORIGIN}${BASE}/#/runs/r%201`);
    await page.waitForSelector('#detail-view[data-state="paused"]', { timeout: 30_000 });
    expect(await page.locator("#control-pause").isDisabled()).toBe(true);
    await page.click("#control-resume");
    await expect.poll(() => posted.map((p) => p.path)).toEqual([`${BASE}/api/runs/r%201/resume`]);
    await page.close();

    const plain = await browser.newPage();
    await serve(plain, waitingRun("waiting"), false);
    await plain.goto(`${ORIGIN}${BASE}/#/runs/r%201`);
    await plain.waitForSelector('#detail-view[data-state="waiting"]', { timeout: 30_000 });
    expect(await plain.locator("#detail-controls").isVisible()).toBe(false);
    await plain.close();
  });

  it("shows a queued run's reason, key and priority, and the schedules with their ticks", async () => {
    const queued = waitingRun("queued");
    Object.assign(queued.run, { queuedFor: "concurrency", flowKey: "acme", priority: 7 });
    const page = await browser.newPage();
    await serve(page, queued, true);
    await page.goto(`${ORIGIN}${BASE}/#/runs/r%201`);
    await page.waitForSelector('#detail-view[data-state="queued"]', { timeout: 30_000 });
    const facts = await page.locator("#detail-facts").textContent();
    expect(facts).toContain("concurrency of key acme");
    expect(facts).toMatch(/priority\s*7/);
    await page.close();

    const tick = Date.UTC(2030, 0, 1, 3);
    const overview = {
      version: 1,
      objectId: "o1",
      parts: ["tasks"],
      runs: { byState: { queued: 1 }, limit: 1000, complete: true, capped: [] },
      schedules: [
        {
          scheduleId: "nightly",
          definition: "report@v1",
          cron: "0 3 * * *",
          timezone: "Europe/Paris",
          overlap: "skip",
          backfill: 0,
          source: "definition",
          nextTickAt: tick + 86_400_000,
          lastTickAt: tick,
          lastRunId: "nightly@2030-01-01T03:00:00.000Z",
          missed: 2,
          skipped: 1,
        },
      ],
    };
    const home = await browser.newPage();
    await serve(home, overview, false);
    await home.goto(`${ORIGIN}${BASE}/`);
    await home.waitForSelector('#schedules tr[data-schedule="nightly"]', { timeout: 30_000 });
    const cells = await home.locator('#schedules tr[data-schedule="nightly"] td').allInnerTexts();
    expect(cells).toEqual([
      "nightly",
      "report@v1",
      "0 3 * * * (Europe/Paris)",
      "2030-01-02 03:00:00.000",
      "2030-01-01 03:00:00.000",
      "nightly@2030-01-01T03:00:00.000Z",
      "2",
      "1",
    ]);
    expect(await home.locator("#counts").textContent()).toContain("queued 1");
    await home.close();
  });
});
