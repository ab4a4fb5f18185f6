import { execFile } from "node:child_process";
import { readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Guide, GuideRun } from "../src/index.ts";

const docsDir = fileURLToPath(new URL("../../../docs/", import.meta.url));
const demoDir = fileURLToPath(new URL("../../../apps/demo-worker/", import.meta.url));

/**
 * Every guide of docs/ with at least one runnable ```sh block, in name order, then the demo's
 * README, whose examples run against the same server as one more guide.
 */
const guides = [
  ...readdirSync(docsDir)
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => Guide.read(docsDir + name)),
  Guide.read(`${demoDir}README.md`, "apps/demo-worker/README.md"),
].filter((guide) => guide.runnable.length > 0);

describe("the docs' shell examples against wrangler dev of the demo", () => {
  let dev: WranglerDev;
  beforeAll(async () => {
    // The guides read /debug/* routes, which the demo serves only with DEMO_DEBUG=on.
    dev = await startWranglerDev({ cwd: demoDir, vars: { DEMO_DEBUG: "on" } });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("finds guides to run, the demo's README among them, and the tools they use on this machine", async () => {
    expect(guides.length).toBeGreaterThan(1);
    expect(guides.map((guide) => guide.name)).toContain("apps/demo-worker/README.md");
    for (const tool of ["bash", "curl", "jq"]) {
      await promisify(execFile)("bash", ["-c", `command -v ${tool}`]).catch(() => {
        expect.fail(
          `the guides' shell examples use ${tool}, which is not on PATH (apt-get install ${tool})`,
        );
      });
    }
  });

  it("durable-streams.md's official-client example writes and reads a stream", async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--disable-warning=ExperimentalWarning", "examples/protocol-client/notes.ts"],
      {
        cwd: fileURLToPath(new URL("..", import.meta.url)),
        env: { ...process.env, BASE_URL: dev.url },
        timeout: 60_000,
      },
    );
    expect(JSON.parse(stdout)).toEqual([{ text: "first" }, { text: "second" }]);
  });

  for (const guide of guides) {
    it(`${guide.name} runs top to bottom when pasted`, async () => {
      const outcome = await new GuideRun(guide, { baseUrl: dev.url, timeoutMs: 90_000 }).run();
      if (!outcome.ok) expect.fail(outcome.message);
      console.info(`${guide.name}: ${outcome.blocks} blocks in ${outcome.ms} ms`);
    });
  }
});
