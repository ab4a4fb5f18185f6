import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOCS_BASE_URL, Guide, GuideRun } from "../src/index.ts";

const guide = (markdown: string) => new Guide("/docs/example.md", markdown);
const fence = "```";

describe("GuideRun", () => {
  let server: Server;
  let baseUrl: string;
  beforeAll(async () => {
    server = createServer((request, response) => {
      const status = Number(
        new URL(request.url ?? "/", "http://x").searchParams.get("status") ?? 200,
      );
      response.writeHead(status, { "content-type": "text/plain" }).end(`answered ${status}\n`);
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  const run = (markdown: string) =>
    new GuideRun(guide(markdown), { baseUrl, timeoutMs: 10_000 }).run();

  it("runs blocks in order in one shell, so a variable set in one block is there in the next", async () => {
    const outcome = await run(
      `${fence}sh\nbase=${DOCS_BASE_URL}\nid=a\n${fence}\ntext\n${fence}sh\ntest "$id" = a\ncurl -sS "$base/?status=200"   # → 200\n${fence}\n`,
    );
    expect(outcome).toMatchObject({ ok: true, blocks: 2 });
  });

  it("skips blocks marked no-run and blocks of other languages", async () => {
    const outcome = await run(
      `${fence}sh no-run\nexit 3\n${fence}\n${fence}ts\nexit 4\n${fence}\n${fence}sh\ntrue\n${fence}\n`,
    );
    expect(outcome).toMatchObject({ ok: true, blocks: 1 });
  });

  it("fails naming the guide, block, line, command and exit status of the first failing command", async () => {
    const outcome = await run(
      `# Example\n\n${fence}sh\ntrue\n${fence}\n\n${fence}sh\necho one\nls /no/such/dir\necho never\n${fence}\n`,
    );
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.message).toMatch(
      /^example\.md, block 2 \(line 9\): exited 2\n {2}\$ ls \/no\/such\/dir/,
    );
    expect(outcome.message).not.toContain("never\n");
  });

  it("fails naming the expected and received status when a request answers another status than its # → comment", async () => {
    const outcome = await run(
      `${fence}sh\nbase=${DOCS_BASE_URL}\ncurl -sS -o /dev/null -w '%{http_code}\\n' \\\n  "$base/?status=404"   # → 202\necho never\n${fence}\n`,
    );
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.message).toMatch(/^example\.md, block 1 \(line 4\): expected HTTP 202, got 404/);
  });

  it("reports a failing curl inside a command substitution as the line the guide wrote", async () => {
    const outcome = await run(
      `${fence}sh\nrun_id=$(curl -sS --fail http://127.0.0.1:9/x | cat)\n${fence}\n`,
    );
    expect(outcome.ok).toBe(false);
    if (!outcome.ok)
      expect(outcome.message).toMatch(
        /block 1 \(line 2\): exited 7\n {2}\$ run_id=\$\(curl -sS --fail/,
      );
  });

  it("reports a failing curl as the command the guide wrote, not the curl wrapper's line", async () => {
    const outcome = await run(`${fence}sh\ntrue\ncurl -sS http://127.0.0.1:9/x\n${fence}\n`);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok)
      expect(outcome.message).toMatch(
        /block 1 \(line 3\): exited 7\n {2}\$ curl -sS http:\/\/127\.0\.0\.1:9\/x\n/,
      );
  });

  it("fails a block that reads a variable no earlier block set", async () => {
    const outcome = await run(`${fence}sh\necho "$run_id"\n${fence}\n`);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(outcome.message).toContain("run_id: unbound variable");
  });

  it("kills a guide that outlives its budget and names the block it was in", async () => {
    const slow = new GuideRun(
      guide(`${fence}sh\ntrue\n${fence}\n${fence}sh\nsleep 30\n${fence}\n`),
      {
        baseUrl,
        timeoutMs: 1_000,
      },
    );
    const outcome = await slow.run();
    expect(outcome.ok).toBe(false);
    if (!outcome.ok)
      expect(outcome.message).toMatch(
        /did not finish within 1000 ms; it was in block 2 \(line 5\)/,
      );
  });
});
