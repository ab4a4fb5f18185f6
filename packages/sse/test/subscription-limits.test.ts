import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DurableStreamsSubscriptions, type SseEvent } from "../src/index";
import { control, createStream, offset, until } from "./helpers-subscriptions";

type Clock = { now: number };

/** A hub with default options in a fresh object: every stream's tail is `tail.seq`, webhooks `answer()`. */
function defaultHub(
  state: DurableObjectState,
  clock: Clock,
  tail: { seq: number },
  answer: () => Response,
  events: SseEvent[] = [],
) {
  return new DurableStreamsSubscriptions(state, {
    peer: () => ({
      fetch: async () =>
        new Response(null, { status: 200, headers: { "Stream-Next-Offset": offset(tail.seq) } }),
    }),
    fetch: async () => answer(),
    now: () => clock.now,
    onEvent: (event) => events.push(event),
  });
}

const put = (hub: DurableStreamsSubscriptions, id: string, body: unknown) =>
  hub.fetch(
    new Request(`https://hub.test/v1/stream/__ds/subscriptions/${id}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );

const fresh = () => env.FIXTURE.getByName(`limits-${crypto.randomUUID()}`);

describe("subscriptions: the default bounds", () => {
  it("retries a failing webhook after 1 s, 2 s, 4 s … 60 s (±20 %) and dead-letters it at the 10th failure", async () => {
    await runInDurableObject(fresh(), async (_object, state) => {
      const clock = { now: Date.UTC(2030, 0, 1) };
      const events: SseEvent[] = [];
      const hub = defaultHub(
        state,
        clock,
        { seq: 1 },
        () => new Response("down", { status: 500 }),
        events,
      );
      expect(
        (
          await put(hub, "w", {
            type: "webhook",
            pattern: "a/*",
            webhook: { url: "https://h.example/x" },
          })
        ).status,
      ).toBe(201);
      await hub.streamChanged("a/1");
      const waits: number[] = [];
      for (let attempt = 1; attempt <= 12; attempt++) {
        await until(
          async () => events.filter((e) => e.type.startsWith("sse:subscription-d")).length,
          (count) => count >= attempt || events.some((e) => e.type === "sse:subscription-dead"),
        );
        if (events.some((e) => e.type === "sse:subscription-dead")) break;
        const failed = events
          .filter((e) => e.type === "sse:subscription-delivery-failed")
          .at(-1) as Extract<SseEvent, { type: "sse:subscription-delivery-failed" }>;
        waits.push(failed.retryAt - clock.now);
        clock.now = failed.retryAt;
        await hub.alarm();
      }
      const bases = [1, 2, 4, 8, 16, 32, 60, 60, 60].map((s) => s * 1000);
      expect(waits).toHaveLength(9);
      waits.forEach((wait, i) => {
        expect(wait).toBeGreaterThanOrEqual((bases[i] as number) * 0.8);
        expect(wait).toBeLessThanOrEqual((bases[i] as number) * 1.2);
      });
      const dead = hub.get("w");
      expect(dead?.status).toBe("dead");
      expect(dead?.delivery?.last_error).toContain("10 delivery attempts failed");
    });
  });

  it("dead-letters a webhook subscription after 10 wakes in a row end unacknowledged", async () => {
    await runInDurableObject(fresh(), async (_object, state) => {
      const clock = { now: Date.UTC(2030, 0, 1) };
      let delivered = 0;
      const hub = defaultHub(state, clock, { seq: 1 }, () => {
        delivered += 1;
        return Response.json({});
      });
      await put(hub, "silent", {
        type: "webhook",
        pattern: "a/*",
        webhook: { url: "https://h.example/x" },
      });
      await hub.streamChanged("a/1");
      for (let wake = 1; wake <= 11; wake++) {
        await until(
          async () => delivered,
          (count) => count >= wake || hub.get("silent")?.status === "dead",
        );
        // The default lease is 30 s.
        clock.now += 30_001;
        await hub.alarm();
      }
      expect(delivered).toBe(10);
      expect(hub.get("silent")?.status).toBe("dead");
      expect(hub.get("silent")?.delivery?.last_error).toContain("10 wakes in a row");
    });
  });

  it("holds at most 1,000 subscriptions and links at most 1,000 streams to one", async () => {
    await runInDurableObject(fresh(), async (_object, state) => {
      const clock = { now: Date.UTC(2030, 0, 1) };
      const hub = defaultHub(state, clock, { seq: 1 }, () => Response.json({ done: true }));
      for (let i = 0; i < 1000; i++) {
        const answer = await put(hub, `s${i}`, {
          type: "pull-wake",
          pattern: `p${i}/*`,
          wake_stream: "w",
        });
        expect(answer.status).toBe(201);
      }
      const over = await put(hub, "one-more", {
        type: "pull-wake",
        streams: ["x"],
        wake_stream: "w",
      });
      expect(over.status).toBe(409);
      expect(((await over.json()) as { error: { code: string } }).error.code).toBe(
        "SUBSCRIPTION_LIMIT",
      );
      for (let i = 0; i < 1001; i++) await hub.streamChanged(`p0/${i}`);
      expect(hub.get("s0")?.streams).toHaveLength(1000);
    });
  }, 60_000);
});

describe("subscriptions: a receiver that never answers", () => {
  it("counts a webhook with no answer within deliveryTimeoutMs as failed, and still delivers the others", async () => {
    await runInDurableObject(fresh(), async (_object, state) => {
      const events: SseEvent[] = [];
      const hub = new DurableStreamsSubscriptions(state, {
        peer: () => ({
          fetch: async () =>
            new Response(null, { status: 200, headers: { "Stream-Next-Offset": offset(1) } }),
        }),
        // The "stuck" receiver never answers; the "ok" one takes everything.
        fetch: (request) =>
          new URL(request.url).host === "stuck.example"
            ? new Promise<Response>(() => {})
            : Promise.resolve(Response.json({ done: true })),
        deliveryTimeoutMs: 50,
        onEvent: (event) => events.push(event),
      });
      await put(hub, "stuck", {
        type: "webhook",
        pattern: "a/*",
        webhook: { url: "https://stuck.example/x" },
      });
      await put(hub, "ok", {
        type: "webhook",
        pattern: "a/*",
        webhook: { url: "https://ok.example/x" },
      });
      await hub.streamChanged("a/1");
      const failed = await until(
        async () => events.find((e) => e.type === "sse:subscription-delivery-failed"),
        (event) => event !== undefined,
      );
      expect(failed).toMatchObject({ subscriptionId: "stuck", error: "no answer within 50 ms" });
      expect(
        events.some((e) => e.type === "sse:subscription-delivered" && e.subscriptionId === "ok"),
      ).toBe(true);
      expect(hub.get("ok")?.streams[0]?.acked_offset).toBe(offset(1));
    });
  });
});

describe("subscriptions: a dead pull-wake subscription", () => {
  it("answers a claim 409 SUBSCRIPTION_DEAD once its wake stream kept refusing its events", async () => {
    await createStream("deadpull/a");
    const created = await control("subscriptions/dead-pull", {
      method: "PUT",
      body: { type: "pull-wake", streams: ["deadpull/a"], wake_stream: "wakes/never-created" },
    });
    expect(created.status).toBe(201);
    const stub = env.SUB_STREAM.getByName("deadpull/a");
    await stub.fetch("https://streams.test/v1/stream/deadpull/a", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "[1]",
    });
    const hubStub = env.HUB.getByName("hub");
    // Each round moves the hub's clock 20 s on (past any retry or delivery timeout) and runs its alarm.
    for (let round = 1; round <= 10; round++) {
      if ((await control("subscriptions/dead-pull")).body.status === "dead") break;
      await hubStub.skew(round * 20_000);
      await runInDurableObject(hubStub, (hub) => hub.alarm());
    }
    const dead = await control("subscriptions/dead-pull");
    expect(dead.body.status).toBe("dead");
    expect((dead.body.delivery as { last_error: string }).last_error).toBe(
      "4 delivery attempts failed; the last answered 404.",
    );
    const claim = await control("subscriptions/dead-pull/claim", {
      method: "POST",
      body: { worker: "w" },
    });
    expect(claim.status).toBe(409);
    expect((claim.body.error as { code: string }).code).toBe("SUBSCRIPTION_DEAD");
    await hubStub.skew(0);
    await control("subscriptions/dead-pull", { method: "DELETE" });
  });
});
