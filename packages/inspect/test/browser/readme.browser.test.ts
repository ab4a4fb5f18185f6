import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startWranglerDev,
  type WranglerDev,
} from "../../../../tools/wrangler-harness/src/index.ts";

const packageDir = fileURLToPath(new URL("../..", import.meta.url));
/** Under the package's node_modules: ignored by git, and `@durablekit/*` resolve from it. */
const workerDir = `${packageDir}node_modules/.cache/inspect-readme/`;
const TOKEN = "a-token-for-the-readme";

/** The Debian package's Chromium; never a downloaded browser. */
const CHROMIUM = "/usr/bin/chromium";

/** The README's example, as written: its first `ts` block. */
function readmeExample(): string {
  const readme = readFileSync(`${packageDir}README.md`, "utf8");
  const block = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
  if (block === undefined) throw new Error("README.md has no ts block");
  return block;
}

describe("the README's example in headless Chromium under wrangler dev", () => {
  let dev: WranglerDev;
  let browser: Browser;
  beforeAll(async () => {
    rmSync(workerDir, { recursive: true, force: true });
    mkdirSync(workerDir, { recursive: true });
    // The example, and a Worker that sends every request to one Room.
    writeFileSync(
      `${workerDir}room.ts`,
      `${readmeExample()}
export default {
  fetch(request: Request, env: { ROOM: DurableObjectNamespace<Room> }): Promise<Response> | Response {
    if (new URL(request.url).pathname === "/health") return new Response("ok");
    return env.ROOM.get(env.ROOM.idFromName("room")).fetch(request);
  },
};
`,
    );
    writeFileSync(
      `${workerDir}wrangler.jsonc`,
      JSON.stringify({
        name: "inspect-readme",
        main: "room.ts",
        compatibility_date: "2026-11-01",
        compatibility_flags: ["nodejs_compat"],
        durable_objects: { bindings: [{ name: "ROOM", class_name: "Room" }] },
        migrations: [{ tag: "v1", new_sqlite_classes: ["Room"] }],
        vars: { INSPECT_TOKEN: TOKEN },
        // The package itself, as its source (a package does not resolve its own name).
        alias: { "@durablekit/inspect": `${packageDir}src/index.ts` },
      }),
    );
    writeFileSync(`${workerDir}package.json`, '{ "private": true, "type": "module" }\n');
    dev = await startWranglerDev({ cwd: packageDir, config: `${workerDir}wrangler.jsonc` });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox"],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await dev?.dispose();
  });

  it("lets a browser in with the token in the page's URL: its script, style, fetch and EventSource calls all pass authorize", async () => {
    const page = await browser.newPage();
    const refused: string[] = [];
    const asked: string[] = [];
    page.on("response", (response) => {
      if (response.status() >= 400) refused.push(`${response.status()} ${response.url()}`);
    });
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${dev.url}/inspect/?token=${TOKEN}`);
    // The overview arrives over the EventSource, the lists over fetch: the page's parts and counts.
    await page
      .locator("#object", { hasText: "parts: tasks, streams, chat" })
      .waitFor({ timeout: 30_000 });
    await page.locator("#live", { hasText: "live" }).waitFor();
    await page.waitForSelector("#counts .counts.runs");
    await page.waitForTimeout(500);
    expect(refused).toEqual([]);
    expect(problems).toEqual([]);
    expect(asked).toEqual(
      expect.arrayContaining([
        "/inspect/",
        "/inspect/inspect.js",
        "/inspect/inspect.css",
        "/inspect/api/live",
        "/inspect/api/runs",
        "/inspect/api/streams",
      ]),
    );
    await page.close();

    // Without the token, nothing: the page itself is refused.
    const stranger = await browser.newPage();
    const answer = await stranger.goto(`${dev.url}/inspect/`);
    expect(answer?.status()).toBe(403);
    await stranger.close();
  });
});
