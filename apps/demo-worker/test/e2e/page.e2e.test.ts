import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostCounts } from "../../src/host-counts.ts";
import { poll } from "./poll.ts";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));
const screenshots = fileURLToPath(new URL("./__screenshots__/", import.meta.url));

/** The Debian package's Chromium (installed by `.ci/run` when missing); never a downloaded browser. */
const CHROMIUM = "/usr/bin/chromium";

/** The seqs of the chunks the page shows for its one stream, in page order. */
function shownSeqs(page: Page): Promise<number[]> {
  return page.$$eval(".card.stream li.chunk", (items) =>
    items.map((item) => Number(item.getAttribute("data-seq"))),
  );
}

function shownState(page: Page): Promise<string | null> {
  return page.$eval(".card.stream header .state", (node) => node.getAttribute("data-state"));
}

/** The run events the page shows under its one stream's card: `[seq, type]`, in page order. */
function shownEvents(page: Page): Promise<Array<[number, string]>> {
  return page.$$eval(".card.stream li.run-event", (items) =>
    items.map((item): [number, string] => [
      Number(item.getAttribute("data-seq")),
      item.getAttribute("data-type") ?? "",
    ]),
  );
}

describe("the demo page in headless Chromium under wrangler dev", () => {
  let dev: WranglerDev;
  let browser: Browser;
  beforeAll(async () => {
    dev = await startWranglerDev({
      cwd: demoDir,
      vars: { DEMO_DEBUG: "on", CHAT_TOKEN_DELAY_MS: "60" },
    });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox"],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.dispose();
  });

  it("starts a task, shows its chunks live, and after a reload shows each chunk exactly once", async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    await page.goto(`${dev.url}/`);
    await page.fill("#task-steps", "8");
    await page.fill("#task-step-ms", "400");
    await page.click("#task-start");

    // Live: chunks appear one by one while the run is still going.
    await page.locator(".card.stream li.chunk").nth(1).waitFor({ timeout: 30_000 });
    const before = await shownSeqs(page);
    expect(before.length).toBeLessThan(8);
    expect(await shownState(page)).toBe("live");

    // Reload mid-stream: the page shows what it had and continues from there.
    await page.reload();
    await page.waitForSelector('.card.stream header .state[data-state="done"]', {
      timeout: 30_000,
    });
    const after = await shownSeqs(page);
    expect(after).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(after.slice(0, before.length)).toEqual(before);
    const values = await page.$$eval(".card.stream li.chunk", (items) =>
      items.map((item) => item.textContent),
    );
    expect(values).toEqual(after.map((seq) => `#${seq} {"i":${seq}}`));

    // The run's own events, over SSE across the reload: each once, numbered without a gap, from
    // its acceptance to its settlement.
    await page.waitForSelector('.card.stream .run-events-box .state[data-state="done"]', {
      timeout: 30_000,
    });
    const events = await shownEvents(page);
    expect(events.map(([seq]) => seq)).toEqual(events.map((_, i) => i));
    expect(events[0]?.[1]).toBe("task:accepted");
    expect(events.at(-1)?.[1]).toBe("task:completed");
    expect(
      events.filter(([, type]) => type === "task:step:completed").length,
    ).toBeGreaterThanOrEqual(8);

    // Another reload of a finished stream shows the same chunks and events, still once each.
    await page.reload();
    await page.waitForSelector('.card.stream header .state[data-state="done"]');
    expect(await shownSeqs(page)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await shownEvents(page)).toEqual(events);
    expect(problems).toEqual([]);

    // For the record: the page as a person leaves it.
    mkdirSync(screenshots, { recursive: true });
    await page.screenshot({ path: `${screenshots}page.png`, fullPage: true });

    // The card links its run to the inspector (shown because DEMO_DEBUG is on), which shows it.
    const inspect = page.locator(".card.stream a.inspect");
    await inspect.waitFor({ state: "visible" });
    const href = (await inspect.getAttribute("href")) ?? "";
    expect(href).toMatch(/^\/inspect\/#\/runs\/[^/]+$/);
    await inspect.click();
    await page.waitForSelector('#detail-view[data-state="completed"]', { timeout: 30_000 });
    expect(await page.locator("#detail-timeline .lane:not(.attempts)").count()).toBe(8);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("runs a program and shows its result, and continues a chat turn across a reload without repeating a word", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/`);

    await page.click("#program-run");
    await page.locator('.card.program .state[data-state="completed"]').waitFor({ timeout: 30_000 });
    expect(await page.locator(".card.program .fields dd.value").textContent()).toContain(
      '"name":"build"',
    );

    await page.click("#chat-send");
    const text = page.locator(".card.chat .text");
    // Mid-turn: some words shown, the turn still streaming.
    await poll(
      async () => (((await text.textContent()) ?? "").split(" ").length >= 8 ? true : undefined),
      30_000,
      "the first words of the answer",
    );
    await page.reload();
    await page.locator(".card.chat .state.done").waitFor({ timeout: 30_000 });
    const answer = (await text.textContent()) ?? "";
    expect(answer.startsWith("Durable Objects keep state next to the code that changes it. ")).toBe(
      true,
    );
    expect(answer.endsWith("finished, or with an error chunk.")).toBe(true);
    // Each word once: the scripted answer has 70 words, and its first sentence appears once.
    expect(answer.split(/\s+/).length).toBe(70);
    expect(answer.split("Durable Objects keep state").length).toBe(2);
    // The program's result is still shown after the reload.
    expect(await page.locator(".card.program pre").textContent()).toContain('"state": "completed"');
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a chat turn the server finished after wrangler dev was killed mid-answer, with no page open during the restart", async () => {
    // One browser profile throughout: the page keeps its chats in localStorage.
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    let page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/`);
    await page.click("#chat-send");
    const words = async () =>
      ((await page.locator(".card.chat .text").first().textContent()) ?? "").split(" ").length;
    await poll(async () => ((await words()) >= 6 ? true : undefined), 30_000, "the first words");
    await page.close(); // no page during the restart
    await dev.kill();
    dev = await dev.restart();
    // The object's alarm recovers the turn (2 s) and the model finishes it (about 64 words × 60 ms).
    await new Promise((resolve) => setTimeout(resolve, 2_000 + 64 * 60 + 2_000));
    page = await context.newPage();
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/`);
    const card = page.locator(".card.chat").first();
    await card.locator(".state.done").waitFor({ timeout: 30_000 });
    const answer = (await card.locator(".text").textContent()) ?? "";
    expect(answer.startsWith("Durable Objects keep state next to the code that changes it. ")).toBe(
      true,
    );
    expect(answer.endsWith("finished, or with an error chunk.")).toBe(true);
    expect(answer.split(/\s+/).length).toBe(70);
    mkdirSync(screenshots, { recursive: true });
    await page.screenshot({ path: `${screenshots}chat-after-restart.png`, fullPage: true });
    expect(problems).toEqual([]);
    await context.close();
  });

  it("fans a job out from its form, shows the completed fan-in on its card, and after a reload shows it again", async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/`);
    await page.fill("#fanout-children", "30");
    await page.fill("#fanout-objects", "10");
    await page.fill("#fanout-ms", "300");
    await page.click("#fanout-start");
    const card = page.locator(".card.fanout").first();
    await card.locator(".state", { hasText: "completed" }).waitFor({ timeout: 60_000 });
    const text = await card.locator(".text").textContent();
    const sum = Array.from({ length: 30 }, (_, i) => i * i).reduce((a, b) => a + b, 0);
    expect(text).toContain("started 30 of 30 children · settled 30");
    expect(text).toContain(`sum of squares ${sum} · not completed 0`);
    expect(await card.locator("progress").getAttribute("value")).toBe("30");
    // A reload follows the saved fan-out again, from the server.
    await page.reload();
    const again = page.locator(".card.fanout").first();
    await again.locator(".state", { hasText: "completed" }).waitFor({ timeout: 30_000 });
    expect(await again.locator(".text").textContent()).toContain(`sum of squares ${sum}`);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("runs three serial runs of one key one at a time, and shows a one-minute schedule's tick and its run", async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/`);
    await page.fill("#serial-key", `key-${Date.now()}`);
    await page.fill("#serial-ms", "1500");
    await page.click("#serial-start");
    const rows = page.locator("#serial-runs tbody tr");
    await poll(async () => ((await rows.count()) === 3 ? true : undefined), 10_000, "three rows");
    // While the first works, the other two wait for its slot.
    await poll(
      async () => {
        const states = await rows.evaluateAll((trs) =>
          trs.map((tr) => tr.getAttribute("data-state")),
        );
        return states.filter((state) => state === "queued").length === 2 ? true : undefined;
      },
      5_000,
      "two runs queued behind the first",
    );
    await poll(
      async () => {
        const states = await rows.evaluateAll((trs) =>
          trs.map((tr) => tr.getAttribute("data-state")),
        );
        return states.every((state) => state === "completed") ? true : undefined;
      },
      30_000,
      "the three runs completed",
    );
    const id = `minute-${Date.now()}`;
    await page.fill("#schedule-id", id);
    await page.fill("#schedule-cron", "* * * * *");
    await page.click("#schedule-add");
    const row = page.locator(`#schedules tr[data-schedule="${id}"]`);
    await row.waitFor({ timeout: 10_000 });
    // The tick comes from the workspace's alarm within a minute; the table (read every 5 s) shows it.
    const lastRun = row.locator("td").nth(4);
    await poll(
      async () => ((await lastRun.textContent())?.startsWith(`${id}@`) ? true : undefined),
      75_000,
      "the schedule's first tick",
    );
    const runId = ((await lastRun.textContent()) ?? "").split(" ")[0] as string;
    const run = await poll(
      async () => {
        const response = await fetch(`${dev.url}/tasks/${encodeURIComponent(runId)}`);
        const body = (await response.json()) as { state: string; definition: string };
        return body.state === "completed" ? body : undefined;
      },
      10_000,
      "the tick's run completed",
    );
    expect(run.definition).toBe("demo.tick@v1");
    await row.locator("button").click();
    await row.waitFor({ state: "detached", timeout: 10_000 });
    expect(problems).toEqual([]);
    await page.close();
  }, 150_000);

  it("runs the approval example to its interrupt, and after a reload resumes it from its card to completion, the job started once", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${dev.url}/`);

    await page.selectOption("#program-example", "approval");
    expect(await page.inputValue("#program-code")).toContain('from "codemode:approval"');
    await page.click("#program-run");
    const card = page.locator(".card.program");
    await card.locator('.state[data-state="interrupted"]').waitFor({ timeout: 30_000 });
    expect(await card.locator("pre.result").textContent()).toContain('"state": "interrupted"');
    expect(await card.locator(".interrupt .payload").textContent()).toBe("ship the release?");
    const executionId = await card.getAttribute("data-execution");
    expect(executionId).toMatch(/^page-program-/);

    // After a reload the card is still interrupted (read back from GET /programs/:id) and offers Resume.
    await page.reload();
    await card.locator('.state[data-state="interrupted"]').waitFor({ timeout: 30_000 });
    expect(await card.locator(".resume-value").inputValue()).toBe("true");

    // A value that is not JSON is refused on the page, shown as an error; nothing is sent.
    await card.locator(".resume-value").fill("yes please");
    await card.locator("button.resume").click();
    await card.locator(".interrupt .answer.failed").waitFor();
    expect(await card.locator('.state[data-state="interrupted"]').count()).toBe(1);

    await card.locator(".resume-value").fill("true");
    await card.locator("button.resume").click();
    await card.locator('.state[data-state="completed"]').waitFor({ timeout: 30_000 });
    const result = JSON.parse((await card.locator("pre.result").textContent()) ?? "null");
    expect(result).toMatchObject({
      executionId,
      state: "completed",
      result: { shipped: true, run: { id: `run:${executionId}:1.1`, status: "succeeded" } },
    });
    expect(await card.locator("button.resume").count()).toBe(0);

    // The wrangler dev of this file runs with DEMO_DEBUG=on, so /debug/jobs answers.
    const counts = (await (
      await fetch(`${dev.url}/debug/jobs/${executionId}`)
    ).json()) as HostCounts;
    // Before the interrupt: the job created and its run started, once; the resume replayed them.
    expect(counts).toMatchObject({ creates: 1, starts: 1, approvals: 1, spawns: 0, reads: 0 });
    // After the resume: wait() ran once, on the Run revived from the journal.
    expect(counts).toMatchObject({ waits: 1, revives: 1, revivedWaits: 1 });
    expect(counts.disposals).toBe(counts.targets);

    // Settled: another reload shows the same answer and no Resume.
    await page.reload();
    await card.locator('.state[data-state="completed"]').waitFor();
    expect(JSON.parse((await card.locator("pre.result").textContent()) ?? "null")).toEqual(result);
    expect(await card.locator("button.resume").count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });
});
