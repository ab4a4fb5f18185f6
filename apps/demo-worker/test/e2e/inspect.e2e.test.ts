import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

const screenshots = fileURLToPath(new URL("./__screenshots__/", import.meta.url));

/** The Debian package's Chromium (installed by `.ci/run` when missing); never a downloaded browser. */
const CHROMIUM = "/usr/bin/chromium";

describe("the inspector's page in headless Chromium under wrangler dev", () => {
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

  it("lists a started run, opens it, and draws its steps as bars that grow while it runs", async () => {
    const runId = `inspected-${Date.now()}`;
    const started = await fetch(`${dev.url}/tasks/demo.count@v1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ runId, input: { steps: 6, stepMs: 700 } }),
    });
    expect(started.status).toBe(202);

    const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    await page.goto(`${dev.url}/inspect/`);
    // The list shows the run; its link opens the run's view.
    const link = page.locator("#runs a", { hasText: runId });
    await link.waitFor({ timeout: 30_000 });
    await link.click();
    await page.waitForSelector("#detail-timeline .track .step", { timeout: 30_000 });
    expect(await page.textContent("#detail-title")).toBe(`run ${runId}`);

    // Live: the run's view arrives again as each step is written, so its lanes grow.
    const lanes = () => page.locator("#detail-timeline .lane:not(.attempts)").count();
    const early = await lanes();
    expect(early).toBeLessThan(6);
    await page.waitForSelector('#detail-view[data-state="completed"]', { timeout: 30_000 });
    expect(await lanes()).toBe(6);
    const bars = await page.$$eval("#detail-timeline .track .step", (nodes) =>
      nodes.map((node) => ({
        step: node.getAttribute("data-step"),
        state: node.className,
        attempts: node.getAttribute("data-attempts"),
        left: Number.parseFloat((node as unknown as { style: { left: string } }).style.left),
        width: Number.parseFloat((node as unknown as { style: { width: string } }).style.width),
      })),
    );
    expect(bars.map((b) => [b.step, b.state, b.attempts])).toEqual(
      Array.from({ length: 6 }, (_, i) => [`step-${i}`, "step completed", "1"]),
    );
    // Steps lie end to end on the axis: each starts where the one before it ended.
    for (let i = 1; i < bars.length; i++) {
      const before = bars[i - 1] as (typeof bars)[number];
      expect((bars[i]?.left ?? 0) + 0.05).toBeGreaterThanOrEqual(before.left + before.width - 0.05);
    }
    const rows = await page.$$eval("#detail-steps tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)),
    );
    expect(rows.map((cells) => cells.slice(1, 5))).toEqual(
      Array.from({ length: 6 }, (_, i) => [`step-${i}`, "do", "completed", "1"]),
    );
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a step that failed twice then succeeded: three attempts, their errors and the back-off between them", async () => {
    const runId = `retried-${Date.now()}`;
    const started = await fetch(`${dev.url}/tasks/demo.flaky@v1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ runId, input: { failures: 2, retryMs: 800 } }),
    });
    expect(started.status).toBe(202);

    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/inspect/`);
    const link = page.locator("#runs a", { hasText: runId });
    await link.waitFor({ timeout: 30_000 });
    await link.click();
    // While it backs off, the attempt that failed is already on the page with its error.
    await page.waitForSelector('#detail-attempts tbody tr[data-outcome="retry"]', {
      timeout: 30_000,
    });
    await page.waitForSelector('#detail-view[data-state="completed"]', { timeout: 30_000 });

    const attempts = await page.$$eval("#detail-attempts tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
    );
    // attempt, started, after, ran, ended as, step, error
    expect(attempts.map((cells) => [cells[0], cells[4], cells[5], cells[6]])).toEqual([
      ["1", "retry", "charge", "the card was declined (attempt 1 of 3)"],
      ["2", "retry", "charge", "the card was declined (attempt 2 of 3)"],
      ["3", "completed", "", ""],
    ]);
    // The back-off between them, as the page shows it: at least the 800 ms the step asked for.
    for (const cells of attempts.slice(1)) {
      const after = cells[2] ?? "";
      const ms = after.endsWith(" ms") ? Number.parseFloat(after) : Number.parseFloat(after) * 1000;
      expect(ms, after).toBeGreaterThanOrEqual(800);
    }
    const bars = await page.$$eval("#detail-timeline .track .attempt", (nodes) =>
      nodes.map((node) => node.getAttribute("data-outcome")),
    );
    expect(bars).toEqual(["retry", "retry", "completed"]);
    const steps = await page.$$eval("#detail-steps tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
    );
    expect(steps.map((cells) => [cells[1], cells[3], cells[4]])).toEqual([
      ["charge", "completed", "3"],
      ["receipt", "completed", "1"],
    ]);
    expect(problems).toEqual([]);

    // For the record: the run as a person sees it (committed beside this test).
    mkdirSync(screenshots, { recursive: true });
    await page.screenshot({ path: `${screenshots}inspector-run.png`, fullPage: true });
    await page.close();
  });

  it("shows the calls of a program a run ran, and links them to the program's own view", async () => {
    const runId = `program-${Date.now()}`;
    const code = `import { createJob } from "codemode:jobs";
export default async function () {
  const job = await createJob({ name: "inspected" });
  return job.info();
}`;
    const started = await fetch(`${dev.url}/tasks/demo.program@v1`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ runId, input: { code } }),
    });
    expect(started.status).toBe(202);
    const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/inspect/#/runs/${runId}`);
    await page.waitForSelector('#detail-view[data-state="completed"]', { timeout: 30_000 });
    await page.waitForSelector("#detail-journals table.calls tbody tr");
    const calls = await page.$$eval("#detail-journals table.calls tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 4).map((td) => td.textContent)),
    );
    expect(calls).toEqual([
      ["1", "codemode:jobs", "createJob", "handle"],
      ["1.1", "codemode:jobs#Job", "info", "value"],
    ]);
    // The journal's heading links the program's own view.
    await page.click("#detail-journals h3 a");
    await page.locator("#detail-title", { hasText: `program program:${runId}` }).waitFor();
    await page.waitForSelector('#detail-view[data-state="completed"]');
    expect(await page.textContent("#detail-facts")).toContain("replay");
    expect(problems).toEqual([]);
    await page.close();
  });
  it("lists the child runs a fan-out started, with their states and objects", async () => {
    const started = await fetch(`${dev.url}/fanout`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ children: 4, objects: 2 }),
    });
    expect(started.status).toBe(202);
    const { runId } = (await started.json()) as { runId: string };
    const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/inspect/#/runs/${runId}`);
    await page.waitForSelector('#detail-view[data-state="completed"]', { timeout: 30_000 });
    await page.waitForSelector('#detail-children:not([hidden]) tbody tr[data-state="completed"]');
    const rows = await page.$$eval("#detail-children tbody tr", (trs) =>
      trs.map((tr) => {
        const cells = [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "");
        return [cells[0], cells[1], cells[3], cells[4]?.split(" ")[0], cells[5]];
      }),
    );
    expect(rows).toEqual(
      Array.from({ length: 4 }, (_, i) => [
        `child ${i}`,
        "0",
        "demo.shard@v1",
        "SHARD",
        "completed",
      ]),
    );
    expect(problems).toEqual([]);
    await page.close();
  });
});
