import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

/** The Debian package's Chromium (installed by `.ci/run` when missing); never a downloaded browser. */
const CHROMIUM = "/usr/bin/chromium";

// `pnpm dev` runs the demo without DEMO_DEBUG: the page a person opens first.
describe("the demo page without DEMO_DEBUG, in headless Chromium under wrangler dev", () => {
  let dev: WranglerDev;
  let browser: Browser;
  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox"],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.dispose();
  });

  it("answers an inspection route with a 404 that says how to turn it on", async () => {
    for (const path of ["/inspect/", "/inspect/api/overview", "/debug/streams/x"]) {
      const response = await fetch(`${dev.url}${path}`);
      expect(response.status, path).toBe(404);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("demo/not-found");
      expect(body.error.message).toContain("DEMO_DEBUG=on");
      expect(body.error.message).toContain("wrangler dev --var DEMO_DEBUG:on");
    }
    const other = (await (await fetch(`${dev.url}/no-such-route`)).json()) as {
      error: { message: string };
    };
    expect(other.error.message).not.toContain("DEMO_DEBUG");
  });

  it("runs a task and a program with no failed request, shows readable cards, and keeps form values across a reload", async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(`console: ${message.text()}`);
    });
    page.on("requestfailed", (request) => {
      // An EventSource the page closes on `done`, or a request a reload cancels, is aborted by the
      // page itself; anything else that fails to load is a problem.
      const error = request.failure()?.errorText ?? "";
      if (error !== "net::ERR_ABORTED") problems.push(`failed (${error}): ${request.url()}`);
    });
    page.on("response", (response) => {
      if (response.status() >= 400) problems.push(`${response.status()}: ${response.url()}`);
    });
    await page.goto(`${dev.url}/`);

    // A task: the answer line says what happened; the run's state is the stream card's.
    await page.fill("#task-steps", "3");
    await page.fill("#task-step-ms", "50");
    await page.click("#task-start");
    await page
      .locator('.card.stream header .state[data-state="done"]')
      .waitFor({ timeout: 30_000 });
    const answer = (await page.locator("#task-answer").textContent()) ?? "";
    expect(answer).toMatch(/^started run \S+ \(HTTP 202\)/);
    expect(answer).not.toContain("running");
    // No inspector here: its links stay hidden and the page never asked for it.
    expect(await page.locator("a.inspect:visible").count()).toBe(0);

    // A program to its interrupt: the question once, readable; the JSON only behind its toggle.
    await page.selectOption("#program-example", "approval");
    await page.click("#program-run");
    const card = page.locator(".card.program");
    await card.locator('.state[data-state="interrupted"]').waitFor({ timeout: 30_000 });
    expect(await card.locator(".interrupt .payload").textContent()).toBe("ship the release?");
    // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point; the JSON behind the closed toggle holds the question too.
    expect((await card.innerText()).split("ship the release?").length).toBe(2);
    expect(await card.locator("pre.result").isVisible()).toBe(false);
    await card.locator("details.raw summary").click();
    expect(await card.locator("pre.result").isVisible()).toBe(true);
    expect(await card.locator("pre.result").textContent()).toContain(
      '"reason": "ship the release?"',
    );
    await card.locator("details.raw summary").click();

    await card.locator("button.resume").click();
    await card.locator('.state[data-state="completed"]').waitFor({ timeout: 30_000 });
    expect(await card.locator(".fields dt").allTextContents()).toEqual(["result"]);
    const result = JSON.parse((await card.locator(".fields dd.value").textContent()) ?? "null");
    expect(result).toMatchObject({ shipped: true, run: { status: "succeeded" } });
    expect(await card.locator(".interrupt").textContent()).toBe("");

    // What was typed survives a reload.
    await page.fill("#task-steps", "7");
    await page.fill("#task-step-ms", "123");
    await page.fill("#watch-stream", "a-stream-to-watch");
    await page.fill("#chat-text", "Is this kept?");
    await page.fill("#fanout-children", "12");
    await page.fill("#program-code", "export default async () => 42;");
    await page.reload();
    await card.locator('.state[data-state="completed"]').waitFor();
    expect(await page.inputValue("#task-steps")).toBe("7");
    expect(await page.inputValue("#task-step-ms")).toBe("123");
    expect(await page.inputValue("#watch-stream")).toBe("a-stream-to-watch");
    expect(await page.inputValue("#chat-text")).toBe("Is this kept?");
    expect(await page.inputValue("#fanout-children")).toBe("12");
    expect(await page.inputValue("#program-example")).toBe("approval");
    expect(await page.inputValue("#program-code")).toBe("export default async () => 42;");

    expect(problems).toEqual([]);
    await page.close();
  });
});
