import { DurableStreamsSubscriptions, type SseEvent } from "@durablekit/sse";
import { describe, expect, it } from "vitest";
import { Inspector } from "../src/index";
import { inspectedParts } from "../src/parts";
import { inFixture } from "./helpers";

const offset = (seq: number) => `${String(seq).padStart(16, "0")}_${"0".repeat(16)}`;

describe("a subscription hub as an inspector part", () => {
  it("shows each subscription with its status, and a dead-lettered one as dead, reading only list()", async () => {
    await inFixture(async (_fixture, state) => {
      const events: SseEvent[] = [];
      const hub = new DurableStreamsSubscriptions(state, {
        // Every stream's object answers its HEAD with a tail of 3.
        peer: () => ({
          fetch: async () =>
            new Response(null, { status: 200, headers: { "Stream-Next-Offset": offset(3) } }),
        }),
        // The receiver is down: one failed attempt dead-letters (maxDeliveryAttempts: 1).
        fetch: async () => new Response("down", { status: 503 }),
        maxDeliveryAttempts: 1,
        onEvent: (event) => events.push(event),
      });
      const put = (id: string, body: unknown) =>
        hub.fetch(
          new Request(`https://hub.test/v1/stream/__ds/subscriptions/${id}`, {
            method: "PUT",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body),
          }),
        );
      expect(
        (
          await put("alerts", {
            type: "webhook",
            pattern: "alerts/*",
            webhook: { url: "https://hooks.example/a" },
          })
        ).status,
      ).toBe(201);
      expect(
        (await put("jobs", { type: "pull-wake", streams: ["jobs/a"], wake_stream: "wakes/jobs" }))
          .status,
      ).toBe(201);
      await hub.streamChanged("alerts/1");
      for (let i = 0; i < 100 && !events.some((e) => e.type === "sse:subscription-dead"); i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const inspector = new Inspector(state, { parts: [hub] });
      const overview = inspector.overview();
      expect(overview.parts).toEqual(["subscriptions"]);
      expect(overview.subscriptions?.map((s) => [s.id, s.type, s.status])).toEqual([
        ["alerts", "webhook", "dead"],
        ["jobs", "pull-wake", "active"],
      ]);
      const dead = overview.subscriptions?.[0];
      expect(dead?.dead_at).toBeTypeOf("string");
      expect(dead?.delivery?.last_error).toBe("1 delivery attempts failed; the last answered 503.");
      expect(dead?.streams).toEqual([{ path: "alerts/1", link_type: "glob", acked_offset: "-1" }]);
      // The inspector holds the list read and nothing else of the hub.
      const held = inspectedParts([hub]);
      expect(Object.keys(held.subscriptions ?? {})).toEqual(["list"]);
    });
  });

  it("pages the hub's list and shows at most the first 100 in the overview", async () => {
    await inFixture(async (_fixture, state) => {
      const hub = new DurableStreamsSubscriptions(state, {
        peer: () => ({ fetch: async () => new Response(null, { status: 404 }) }),
      });
      for (let i = 0; i < 101; i++) {
        const answer = await hub.fetch(
          new Request(
            `https://hub.test/v1/stream/__ds/subscriptions/s${String(i).padStart(3, "0")}`,
            {
              method: "PUT",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ type: "pull-wake", streams: ["a"], wake_stream: "w" }),
            },
          ),
        );
        expect(answer.status).toBe(201);
      }
      const first = hub.list({ limit: 60 });
      const second = hub.list({ limit: 60, cursor: first.next ?? undefined });
      expect([first.items.length, second.items.length, second.next]).toEqual([60, 41, null]);
      expect(second.items[0]?.id).toBe("s060");
      const shown = new Inspector(state, { parts: [hub] }).overview().subscriptions ?? [];
      expect(shown).toHaveLength(100);
      expect(shown.at(-1)?.id).toBe("s099");
    });
  });
});
