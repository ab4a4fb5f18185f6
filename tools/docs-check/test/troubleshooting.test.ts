import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// docs/troubleshooting.md quotes messages in ```text produced-by=<case> blocks ("…" stands for a
// part that varies, like a date). Each case here makes the mistake for real and reads what wrangler,
// workerd or a package printed, so a quote that no longer matches fails.
const guide = readFileSync(
  fileURLToPath(new URL("../../../docs/troubleshooting.md", import.meta.url)),
  "utf8",
);
const example = fileURLToPath(new URL("../examples/troubleshooting/", import.meta.url));

/** The guide's quote for a case, as a pattern: literal but for "…". */
function quoteOf(produced: string): RegExp {
  const match = new RegExp(`\`\`\`text produced-by=${produced}\\n\\s*(.+)\\n`).exec(guide);
  if (!match?.[1]) throw new Error(`docs/troubleshooting.md quotes no message for ${produced}`);
  const literal = match[1].trim().replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(literal.replaceAll("…", ".+?"));
}

/** What `wrangler dev` prints when it refuses to start with the example at `date`. */
function refusedStart(date: string): Promise<string> {
  const wranglerPackage = createRequire(`${example}package.json`).resolve("wrangler/package.json");
  const wrangler = join(dirname(wranglerPackage), "bin", "wrangler.js");
  return freePort().then(
    (port) =>
      new Promise((done, fail) => {
        const child = spawn(
          process.execPath,
          [
            wrangler,
            "dev",
            "--ip",
            "127.0.0.1",
            "--port",
            String(port),
            "--compatibility-date",
            date,
            "--show-interactive-dev-session=false",
          ],
          {
            cwd: example,
            detached: true,
            stdio: ["ignore", "pipe", "pipe"],
            env: {
              ...process.env,
              NO_COLOR: "1",
              FORCE_COLOR: "0",
              CI: "true",
              WRANGLER_SEND_METRICS: "false",
            },
          },
        );
        let output = "";
        child.stdout?.on("data", (chunk: Buffer) => {
          output += chunk.toString();
        });
        child.stderr?.on("data", (chunk: Buffer) => {
          output += chunk.toString();
        });
        const timer = setTimeout(() => {
          if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
          fail(new Error(`wrangler dev at ${date} did not stop within 60 s:\n${output}`));
        }, 60_000);
        child.once("exit", () => {
          clearTimeout(timer);
          done(output);
        });
      }),
  );
}

const day = 86_400_000;
const isoDate = (at: number) => new Date(at).toISOString().slice(0, 10);

describe("docs/troubleshooting.md's quoted messages", () => {
  it("a compatibility date newer than wrangler's workerd stops wrangler dev with the quoted message", async () => {
    // Yesterday: not in the future, and newer than the workerd any wrangler 4.156 ships.
    const output = await refusedStart(isoDate(Date.now() - day));
    expect(output).toMatch(quoteOf("wrong-date"));
  });

  it("a compatibility date after today is refused with the quoted message", async () => {
    const output = await refusedStart(isoDate(Date.now() + 400 * day));
    expect(output).toMatch(quoteOf("future-date"));
  });

  describe("under wrangler dev", () => {
    let dev: WranglerDev;
    beforeAll(async () => {
      dev = await startWranglerDev({ cwd: example, readyPath: "/" });
    });
    afterAll(async () => {
      await dev?.dispose();
    });

    it("a part constructed in a key-value class throws the quoted message", async () => {
      const answer = await (await fetch(`${dev.url}/kv-class`)).text();
      expect(answer).toMatch(quoteOf("kv-class"));
    });

    it("every part constructed in a key-value class throws its package's invalid-argument naming new_sqlite_classes", async () => {
      const thrown = (await (await fetch(`${dev.url}/kv-class/every-part`)).json()) as Record<
        string,
        { code?: string; message: string }
      >;
      const codes = Object.fromEntries(Object.entries(thrown).map(([part, e]) => [part, e.code]));
      expect(codes).toEqual({
        Alarms: "compose/invalid-argument",
        Streams: "streams/invalid-argument",
        Tasks: "tasks/invalid-argument",
        JournalStore: "journal/invalid-argument",
        Executor: "bridge/invalid-argument",
        ChatTurns: "chat/invalid-argument",
      });
      for (const error of Object.values(thrown)) {
        expect(error.message).toContain('Declare the class under "new_sqlite_classes"');
      }
    });

    it("a part built again per request throws the quoted message", async () => {
      const answer = await (await fetch(`${dev.url}/per-request`)).text();
      expect(answer).toMatch(quoteOf("per-request"));
    });

    it("a run in an object whose alarm() does not delegate logs the quoted warning", async () => {
      expect(await (await fetch(`${dev.url}/not-delegated`)).text()).toBe("ok");
      // The nap's alarm fires and goes nowhere; the next wake request finds it gone.
      await new Promise((done) => setTimeout(done, 1_500));
      expect(await (await fetch(`${dev.url}/not-delegated/again`)).text()).toBe("ok");
      const quote = quoteOf("not-delegated");
      for (let i = 0; i < 50 && !quote.test(dev.output()); i++) {
        await new Promise((done) => setTimeout(done, 100));
      }
      expect(dev.output()).toMatch(quote);
    });

    it("a run in an object without alarm() logs the quoted warning", async () => {
      expect(await (await fetch(`${dev.url}/no-alarm`)).text()).toBe("ok");
      const quote = quoteOf("no-alarm");
      for (let i = 0; i < 50 && !quote.test(dev.output()); i++) {
        await new Promise((done) => setTimeout(done, 100));
      }
      expect(dev.output()).toMatch(quote);
    });

    it("a stream that expires in an object without alarm() logs the same warning, from the part that asked", async () => {
      const before = dev.output().split(quoteOf("no-alarm")).length;
      expect(await (await fetch(`${dev.url}/no-alarm/streams`)).text()).toBe("ok");
      const count = () => dev.output().split(quoteOf("no-alarm")).length;
      for (let i = 0; i < 50 && count() === before; i++) {
        await new Promise((done) => setTimeout(done, 100));
      }
      expect(count()).toBe(before + 1);
    });
  });
});
