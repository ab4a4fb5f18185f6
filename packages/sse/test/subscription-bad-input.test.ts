import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  append,
  BASE,
  control,
  createStream,
  hub,
  offset,
  receiver,
  until,
  webhook,
} from "./helpers-subscriptions";

const code = (answer: { body: Record<string, unknown> }) =>
  (answer.body.error as { code?: string } | undefined)?.code;

describe("subscriptions: bad input", () => {
  it("refuses malformed subscriptions with INVALID_REQUEST and unsafe webhook URLs with WEBHOOK_URL_REJECTED, storing nothing", async () => {
    const invalid: unknown[] = [
      {},
      { type: "email", streams: ["a"] },
      { type: "webhook", webhook: { url: "https://x.example/h" } },
      { type: "webhook", streams: [], webhook: { url: "https://x.example/h" } },
      { type: "webhook", streams: ["a"] },
      { type: "webhook", streams: [42], webhook: { url: "https://x.example/h" } },
      { type: "webhook", streams: ["__ds/x"], webhook: { url: "https://x.example/h" } },
      { type: "webhook", streams: ["a/../b"], webhook: { url: "https://x.example/h" } },
      { type: "pull-wake", streams: ["a"], wake_stream: "w/./x" },
      {
        type: "webhook",
        streams: ["a"],
        webhook: { url: "https://x.example/h" },
        lease_ttl_ms: 999,
      },
      {
        type: "webhook",
        streams: ["a"],
        webhook: { url: "https://x.example/h" },
        lease_ttl_ms: 1.5,
      },
      { type: "webhook", pattern: "a/".repeat(40), webhook: { url: "https://x.example/h" } },
      { type: "webhook", pattern: "a".repeat(257), webhook: { url: "https://x.example/h" } },
      {
        type: "webhook",
        streams: ["a"],
        webhook: { url: "https://x.example/h" },
        lease_ttl_ms: 600_001,
      },
      { type: "pull-wake", streams: ["a"] },
      {
        type: "webhook",
        streams: Array.from({ length: 101 }, (_, i) => `s${i}`),
        webhook: { url: "https://x.example/h" },
      },
      {
        type: "webhook",
        streams: ["a"],
        webhook: { url: "https://x.example/h" },
        description: "d".repeat(1025),
      },
    ];
    for (const body of invalid) {
      const answer = await control("subscriptions/bad", { method: "PUT", body });
      expect([answer.status, code(answer)], JSON.stringify(body)).toEqual([400, "INVALID_REQUEST"]);
    }
    for (const raw of ["{", "[]", "null", '"text"']) {
      const answer = await control("subscriptions/bad", { method: "PUT", raw });
      expect([answer.status, code(answer)]).toEqual([400, "INVALID_REQUEST"]);
    }
    const big = await control("subscriptions/bad", { method: "PUT", raw: " ".repeat(70_000) });
    expect(code(big)).toBe("INVALID_REQUEST");
    for (const url of [
      "http://10.0.0.1/hook",
      "http://example.com/hook",
      "https://10.1.2.3/hook",
      "https://192.168.1.1/hook",
      "https://169.254.169.254/latest",
      "https://100.64.0.1/",
      "https://127.0.0.1/",
      "https://0x7f000001/",
      "https://[::1]/hook",
      "https://user:pass@example.com/hook",
      "ftp://example.com/hook",
      "https://localhost/hook",
      "not a url",
    ]) {
      const answer = await control("subscriptions/bad", {
        method: "PUT",
        body: { type: "webhook", streams: ["a"], webhook: { url } },
      });
      expect([answer.status, code(answer)], url).toEqual([400, "WEBHOOK_URL_REJECTED"]);
    }
    expect((await control("subscriptions/bad")).status).toBe(404);
  });

  it("answers a changed configuration under an existing id 409, and an unknown route 404", async () => {
    const first = await control("subscriptions/conflict", webhook("conflict", ["c/a"]));
    expect(first.status).toBe(201);
    const same = await control("subscriptions/conflict", webhook("conflict", ["c/a"]));
    expect(same.status).toBe(200);
    const changed = await control("subscriptions/conflict", webhook("conflict", ["c/b"]));
    expect([changed.status, code(changed)]).toEqual([409, "SUBSCRIPTION_ALREADY_EXISTS"]);
    for (const path of [
      "nothing",
      "subscriptions",
      "subscriptions/conflict/unknown",
      "subscriptions/conflict/claim/x",
    ]) {
      const answer = await control(path, { method: "POST", body: {} });
      expect([answer.status, code(answer)], path).toEqual([404, "SUBSCRIPTION_NOT_FOUND"]);
    }
    const claimWebhook = await control("subscriptions/conflict/claim", {
      method: "POST",
      body: { worker: "w" },
    });
    expect(code(claimWebhook)).toBe("INVALID_REQUEST");
    const noWorker = await control("subscriptions/conflict/claim", { method: "POST", body: {} });
    expect(code(noWorker)).toBe("INVALID_REQUEST");
    expect(
      (await control("subscriptions/missing/claim", { method: "POST", body: { worker: "w" } }))
        .status,
    ).toBe(404);
    await control("subscriptions/conflict", { method: "DELETE" });
    expect((await control("subscriptions/conflict")).status).toBe(404);
    // DELETE is idempotent.
    expect((await control("subscriptions/conflict", { method: "DELETE" })).status).toBe(204);
  });

  it("links streams by pattern as they appear, never its own wake stream, and explicit streams from their tail", async () => {
    await createStream("pat/old");
    await append("pat/old", { n: 0 });
    // The hub heard of pat/old: a pattern subscription links it at its tail (old data is not new).
    await createStream("pat-wake/q");
    const created = await control("subscriptions/pattern", {
      method: "PUT",
      body: { type: "pull-wake", pattern: "pat/*", wake_stream: "pat-wake/q" },
    });
    expect(created.status).toBe(201);
    expect(created.body.streams).toEqual([
      { path: "pat/old", link_type: "glob", acked_offset: offset(1) },
    ]);
    await append("pat/new", { n: 0 });
    await append("pat/deep/no", { n: 0 });
    const view = await until(
      () => control("subscriptions/pattern"),
      (answer) => (answer.body.streams as unknown[]).length === 2,
    );
    // A stream linked by its first append starts before it (-1): all of it is pending.
    expect(view.body.streams).toEqual([
      { path: "pat/new", link_type: "glob", acked_offset: "-1" },
      { path: "pat/old", link_type: "glob", acked_offset: offset(1) },
    ]);
    await control("subscriptions/pattern/streams", {
      method: "POST",
      body: { streams: ["pat/new", "x/y"] },
    });
    const both = await control("subscriptions/pattern");
    expect(
      (both.body.streams as { path: string; link_type: string }[]).map((s) => [
        s.path,
        s.link_type,
      ]),
    ).toEqual([
      ["pat/new", "explicit"],
      ["pat/old", "glob"],
      ["x/y", "explicit"],
    ]);
    expect(
      (await hub().fetch(`${BASE}/__ds/subscriptions/pattern/streams/x%2Fy`, { method: "DELETE" }))
        .status,
    ).toBe(204);
    expect(((await control("subscriptions/pattern")).body.streams as unknown[]).length).toBe(2);
    await control("subscriptions/pattern", { method: "DELETE" });
  });

  it("dead-letters a subscription whose receiver keeps failing, shows it, and revives it on a confirming PUT", async () => {
    const stream = "dead/a";
    await createStream(stream);
    expect((await control("subscriptions/dead", webhook("dead", [stream]))).status).toBe(201);
    await receiver("dead").setMode("fail");
    await append(stream, { n: 0 });
    // Four attempts (the hub's maxDeliveryAttempts here), each retried by the alarm at its time.
    // Retries back off 1 s, 2 s, 4 s (±20 %): each round moves the clock 10 s on.
    for (let round = 1; round <= 10; round++) {
      if ((await control("subscriptions/dead")).body.status === "dead") break;
      await hub().skew(round * 10_000);
      await runDurableObjectAlarm(hub());
    }
    const dead = await until(
      () => control("subscriptions/dead"),
      (answer) => answer.body.status === "dead",
    );
    expect(dead.body.dead_at).toBeTypeOf("string");
    expect((dead.body.delivery as { last_error: string }).last_error).toContain(
      "4 delivery attempts failed",
    );
    expect(await hub().eventTypes()).toContain("sse:subscription-dead");
    expect((await receiver("dead").batches()).length).toBe(4);
    await receiver("dead").setMode("take");
    await append(stream, { n: 1 });
    // Dead: no wake opens.
    expect((await control("subscriptions/dead")).body.wake).toBeUndefined();
    const revived = await control("subscriptions/dead", webhook("dead", [stream]));
    expect(revived.status).toBe(200);
    const applied = await until(
      () => receiver("dead").applied(),
      (seen) => (seen[stream]?.length ?? 0) === 2,
    );
    expect(applied[stream]).toEqual([0, 1]);
    expect((await control("subscriptions/dead")).body.status).toBe("active");
    await hub().skew(0);
    await control("subscriptions/dead", { method: "DELETE" });
  });

  it("dead-letters a subscription whose receiver answers but never acknowledges, after 3 wakes", async () => {
    const stream = "silent/a";
    await createStream(stream);
    expect((await control("subscriptions/silent", webhook("silent", [stream]))).status).toBe(201);
    await receiver("silent").setMode("ignore");
    await append(stream, { n: 0 });
    // Each round moves the clock past the 1 s lease: the alarm closes the wake, opens the next.
    for (let round = 1; round <= 10; round++) {
      if ((await control("subscriptions/silent")).body.status === "dead") break;
      await until(
        () => receiver("silent").ignoredCount(),
        (count) => count >= Math.min(round, 3),
      );
      await hub().skew(round * 2_000);
      await runDurableObjectAlarm(hub());
    }
    const dead = await until(
      () => control("subscriptions/silent"),
      (answer) => answer.body.status === "dead",
    );
    expect((dead.body.delivery as { last_error: string }).last_error).toContain(
      "3 wakes in a row ended without an acknowledgement",
    );
    expect(await receiver("silent").ignoredCount()).toBe(3);
    await hub().skew(0);
    await control("subscriptions/silent", { method: "DELETE" });
  });

  it("refuses unsigned, tampered, stale and foreign notifications at the receiver", async () => {
    const hubKeys = await hub().jwks();
    expect(hubKeys.keys[0]).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA" });
    const target = receiver("orders");
    const body = JSON.stringify({
      subscription_id: "orders",
      wake_id: "w_1",
      generation: 1,
      streams: [{ path: "r/a", acked_offset: "-1", tail_offset: offset(3), has_pending: true }],
    });
    const send = (headers: Record<string, string>, text = body) =>
      target.fetch("https://receiver.test/orders", { method: "POST", headers, body: text });
    const t = Math.floor(Date.now() / 1000);
    const kid = hubKeys.keys[0]?.kid as string;
    for (const signature of [
      undefined,
      "garbage",
      `t=${t},kid=${kid},ed25519=AAAA`,
      `t=${t - 600},kid=${kid},ed25519=AAAA`,
      `t=${t},kid=ds_unknown,ed25519=AAAA`,
    ]) {
      const answer = await send(signature === undefined ? {} : { "webhook-signature": signature });
      expect(answer.status).toBe(401);
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe(
        "SIGNATURE_INVALID",
      );
    }
    expect(await target.batches()).toEqual([]);
    expect((await target.fetch("https://receiver.test/orders")).status).toBe(405);
    // Signed by the hub, but for a subscription this receiver does not take: 403, nothing taken.
    await createStream("foreign/a");
    expect(
      (await control("subscriptions/foreign", webhook("foreign", ["foreign/a"], "orders-2")))
        .status,
    ).toBe(201);
    await append("foreign/a", { n: 0 });
    const failed = await until(
      () => control("subscriptions/foreign"),
      (answer) =>
        (answer.body.delivery as { last_error?: string } | undefined)?.last_error !== undefined,
    );
    expect((failed.body.delivery as { last_error: string }).last_error).toBe("answered 403");
    expect(await receiver("orders-2").batches()).toEqual([]);
    await control("subscriptions/foreign", { method: "DELETE" });
  });
});
