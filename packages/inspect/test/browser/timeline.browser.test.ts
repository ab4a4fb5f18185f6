import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pageFiles } from "../../src/http/page.ts";

/** The Debian package's Chromium; never a downloaded browser. */
const CHROMIUM = "/usr/bin/chromium";
const ORIGIN = "http://inspect.test";
const BASE = "/inspect";

/** A completed run whose step `charge` failed once, backed off 800 ms and ran again. */
function backedOffRun(firstAttemptMs: number) {
  const created = 1_700_000_000_000;
  const failedAt = created + 2 + firstAttemptMs;
  const retriedAt = failedAt + 800;
  return {
    version: 1,
    run: {
      runId: "r1",
      definition: "demo.flaky@v1",
      state: "completed",
      attempts: 2,
      waitingFor: null,
      eventType: null,
      wakeAt: null,
      statusMessage: null,
      error: null,
      idempotencyKey: null,
      createdAt: created,
      startedAt: created + 2,
      settledAt: retriedAt + 3,
    },
    input: { failures: 1 },
    result: { charged: true },
    attempts: [
      {
        attempt: 1,
        startedAt: created + 2,
        endedAt: failedAt,
        outcome: "retry",
        step: "charge",
        error: null,
      },
      {
        attempt: 2,
        startedAt: retriedAt,
        endedAt: retriedAt + 3,
        outcome: "completed",
        step: null,
        error: null,
      },
    ],
    steps: [
      {
        index: 0,
        name: "charge",
        kind: "do",
        state: "completed",
        attempts: 2,
        from: created,
        to: retriedAt + 2,
        ranMs: firstAttemptMs + 2,
        wakeAt: null,
        result: { charged: true },
        error: null,
      },
    ],
    journals: [],
    children: [],
  };
}

/** Serves the inspector's page and answers its live feed of `/runs/r1` with `view`, then "final". */
async function serve(page: Page, view: unknown): Promise<void> {
  const files = pageFiles(BASE);
  await page.route(`${ORIGIN}/**`, async (route) => {
    const url = new URL(route.request().url());
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
}

describe("the inspector page's timeline in headless Chromium", () => {
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

  for (const firstAttemptMs of [0, 4]) {
    it(`draws each attempt that ran a backed-off step, one that took ${firstAttemptMs} ms included`, async () => {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(error.message));
      await serve(page, backedOffRun(firstAttemptMs));
      await page.goto(`${ORIGIN}${BASE}/#/runs/r1`);
      await page.waitForSelector('#detail-view[data-state="completed"]', { timeout: 30_000 });
      const bar = page.locator('#detail-timeline .step[data-step="charge"]');
      expect(await bar.getAttribute("class")).toContain("waited");
      // Both attempts ran the step: the first (even within one millisecond) and the retry.
      expect(await bar.locator(".ran").count()).toBe(2);
      expect(problems).toEqual([]);
      await page.close();
    });
  }
});
