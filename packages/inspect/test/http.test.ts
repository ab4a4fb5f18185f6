import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { INSPECT_PAGE_CSP } from "../src/http/page";
import { inspectorResponse } from "../src/index";
import { events, freshStub, get, TOKEN } from "./helpers";

/** Every route of the inspector, as a path below its mount. */
const ROUTES = [
  "/",
  "/inspect.js",
  "/inspect.css",
  "/api/overview",
  "/api/runs",
  "/api/runs/r1",
  "/api/executions",
  "/api/executions/e1",
  "/api/streams",
  "/api/streams/orders",
  "/api/chats/c1/turns",
  "/api/turns/t1",
  "/api/live?view=/overview",
  "/api/nothing-here",
];

async function seeded() {
  const stub = freshStub();
  await runInDurableObject(stub, async ({ streams, tasks }) => {
    const orders = streams.open("orders", { tag: "shop" });
    orders.append({ id: 1 });
    orders.append({ id: 2 });
    await tasks.run("doomed@v1", { reason: "orders" }, { runId: "r1" });
  });
  return stub;
}

describe("inspectorResponse", () => {
  it("answers no route without authorize: 403 when it refuses or throws, 401 when the host gave none", async () => {
    const stub = await seeded();
    for (const route of ROUTES) {
      const refused = await get(stub, `/inspect${route}`, { headers: {} });
      expect(refused.status, route).toBe(403);
      const body = await refused.text();
      expect(body, route).not.toContain("orders");
      const forged = await get(stub, `/inspect${route}`, {
        headers: { "x-inspect-token": "guess" },
      });
      expect(forged.status, route).toBe(403);
      await forged.body?.cancel();
      const unconfigured = await get(stub, `/no-authorize${route}`, { headers: TOKEN });
      expect(unconfigured.status, route).toBe(401);
      expect(await unconfigured.text(), route).not.toContain("orders");
      const throwing = await get(stub, `/throwing${route}`, { headers: TOKEN });
      expect(throwing.status, route).toBe(403);
      await throwing.body?.cancel();
    }
    // A write method is refused too, before and after authorization.
    expect((await get(stub, "/inspect/api/streams", { method: "POST", headers: {} })).status).toBe(
      403,
    );
    const post = await get(stub, "/inspect/api/streams", { method: "POST", headers: TOKEN });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("refuses a basePath that could break out of the page's HTML, and mounts a percent-encoded one", async () => {
    const stub = await seeded();
    await runInDurableObject(stub, async ({ inspector }) => {
      const request = new Request("https://inspect.test/x/", { headers: TOKEN });
      for (const basePath of ['/in"spect', "/a b", "inspect", "/<x>", "/a&b"]) {
        await expect(
          inspectorResponse(request, inspector, { basePath, authorize: () => true }),
        ).rejects.toMatchObject({ code: "inspect/invalid-argument" });
      }
      const mounted = await inspectorResponse(
        new Request("https://inspect.test/chat/a%20b/inspect/api/overview"),
        inspector,
        { basePath: `/chat/${encodeURIComponent("a b")}/inspect`, authorize: () => true },
      );
      expect(mounted.status).toBe(200);
    });
  });

  it("serves a self-contained page under a strict CSP, with no external asset", async () => {
    const stub = await seeded();
    const page = await get(stub, "/inspect/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).toBe(INSPECT_PAGE_CSP);
    expect(INSPECT_PAGE_CSP).toContain("default-src 'none'");
    expect(INSPECT_PAGE_CSP).not.toContain("unsafe-inline");
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/inspect/inspect.js">');
    expect(html).not.toMatch(/<script>|<style>|style="|https?:\/\//);
    const script = await get(stub, "/inspect/inspect.js");
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    const js = await script.text();
    expect(js).not.toMatch(/innerHTML|insertAdjacentHTML|eval\(|new Function/);
    expect((await get(stub, "/inspect")).status).toBe(200);
  });

  it("answers the JSON views, 400 with the code for a bad parameter and 404 for what does not exist", async () => {
    const stub = await seeded();
    const overview = await get(stub, "/inspect/api/overview");
    expect(overview.headers.get("cache-control")).toBe("no-store");
    expect(await overview.json()).toMatchObject({
      version: 1,
      streams: { byState: { streaming: 1 } },
    });
    expect(
      await (await get(stub, "/inspect/api/streams?tag=shop&state=streaming")).json(),
    ).toMatchObject({
      items: [{ streamId: "orders", cursor: 2 }],
      next: null,
    });
    expect(await (await get(stub, "/inspect/api/streams/orders?from=1")).json()).toMatchObject({
      chunks: [{ seq: 1, value: { id: 2 } }],
    });
    const bad = await get(stub, "/inspect/api/streams?limit=lots");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: "inspect/invalid-argument" } });
    expect((await get(stub, "/inspect/api/streams?state=done")).status).toBe(400);
    expect((await get(stub, "/inspect/api/streams/%E0%A4%A")).status).toBe(400);
    const missing = await get(stub, "/inspect/api/streams/nope");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "inspect/not-found" } });
    expect((await get(stub, "/inspect/api/turns/nope")).status).toBe(404);
    const runs = await (await get(stub, "/inspect/api/runs?definition=doomed%40v1")).json();
    expect(runs).toMatchObject({ version: 1, items: [{ runId: "r1" }], next: null });
    expect(await (await get(stub, "/inspect/api/runs/r1")).json()).toMatchObject({
      version: 1,
      run: { runId: "r1", definition: "doomed@v1" },
      input: { reason: "orders" },
    });
    expect((await get(stub, "/inspect/api/runs?state=done")).status).toBe(400);
    expect((await get(stub, "/inspect/api/runs?createdAfter=soon")).status).toBe(400);
    const none = await (await get(stub, "/inspect/api/runs?createdAfter=99999999999999")).json();
    expect(none).toMatchObject({ items: [], next: null });
    expect((await get(stub, "/inspect/api/runs/nope")).status).toBe(404);
    expect((await get(stub, "/inspect/api/executions/nope")).status).toBe(404);
    expect((await get(stub, "/inspect/api/what")).status).toBe(404);
    expect((await get(stub, "/elsewhere")).status).toBe(404);
  });

  it("keeps a view live over SSE: the stream's growth arrives as a new view, and the connection ends after maxLiveMs", async () => {
    const stub = await seeded();
    const response = await get(
      stub,
      `/inspect/api/live?view=${encodeURIComponent("/streams/orders")}`,
    );
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const grow = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await runInDurableObject(stub, ({ streams }) => {
        streams.open("orders", { tag: "shop" }).append({ id: 3 });
      });
    })();
    const seen = await events(response, (s) =>
      s.some(
        (e) => (e.data as { body?: { stream?: { cursor?: number } } }).body?.stream?.cursor === 3,
      ),
    );
    await grow;
    const views = seen
      .filter((e) => e.event === "view")
      .map((e) => e.data as { status: number; body: { stream: { cursor: number } } });
    expect(views[0]).toMatchObject({ status: 200, body: { stream: { cursor: 2 } } });
    expect(views.at(-1)).toMatchObject({ status: 200, body: { stream: { cursor: 3 } } });
    // Unchanged reads send nothing: one event per distinct view.
    expect(new Set(views.map((v) => JSON.stringify(v))).size).toBe(views.length);

    // A view that does not change is sent once, however often it is read (every 20 ms here).
    const still = await get(stub, "/inspect/api/live?view=/overview");
    const quiet = await events(still, () => false, 400);
    expect(quiet.filter((e) => e.event === "view")).toHaveLength(1);

    const ending = await get(stub, "/inspect/api/live?view=/overview");
    const all = await events(ending, (s) => s.some((e) => e.event === "end"), 5000);
    expect(all.at(-1)?.event).toBe("end");
    expect((await get(stub, "/inspect/api/live?view=/live")).status).toBe(400);
    expect((await get(stub, "/inspect/api/live")).status).toBe(400);
  });
});
