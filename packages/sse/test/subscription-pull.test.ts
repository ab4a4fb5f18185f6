import { abortAllDurableObjects, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  append,
  control,
  createStream,
  hub,
  offset,
  readAll,
  until,
} from "./helpers-subscriptions";

type Claim = {
  wake_id: string;
  generation: number;
  token: string;
  streams: { path: string; acked_offset: string; tail_offset: string; has_pending: boolean }[];
};

async function pullSubscription(id: string, streams: string[], wake: string): Promise<void> {
  await createStream(wake);
  const created = await control(`subscriptions/${id}`, {
    method: "PUT",
    body: { type: "pull-wake", streams, wake_stream: wake, lease_ttl_ms: 1000 },
  });
  expect(created.status).toBe(201);
}

async function claim(id: string, worker: string) {
  return control(`subscriptions/${id}/claim`, { method: "POST", body: { worker } });
}

describe("subscriptions: pull-wake", () => {
  it("writes a wake event, lets one worker claim, fences the rest, and opens the next wake after an ack", async () => {
    const stream = "pull/a";
    await createStream(stream);
    await pullSubscription("pull-a", [stream], "wakes/a");
    await append(stream, { n: 0 }, { n: 1 });
    const events = await until(
      () => readAll("wakes/a"),
      (list) => list.length === 1,
    );
    expect(events[0]).toMatchObject({ type: "wake", subscription_id: "pull-a", generation: 1 });
    const first = await claim("pull-a", "w1");
    expect(first.status).toBe(200);
    const held = first.body as unknown as Claim;
    expect(held.streams[0]).toMatchObject({
      path: stream,
      acked_offset: offset(0),
      tail_offset: offset(2),
      has_pending: true,
    });
    const busy = await claim("pull-a", "w2");
    expect(busy.status).toBe(409);
    expect(busy.body.error).toMatchObject({ code: "ALREADY_CLAIMED", current_holder: "w1" });
    const ack = await control("subscriptions/pull-a/ack", {
      method: "POST",
      token: held.token,
      body: {
        wake_id: held.wake_id,
        generation: held.generation,
        acks: [{ stream, offset: offset(2) }],
        done: true,
      },
    });
    expect(ack).toEqual({ status: 200, body: { ok: true, next_wake: false } });
    const none = await claim("pull-a", "w2");
    expect(none.status).toBe(409);
    expect((none.body.error as { code: string }).code).toBe("NO_PENDING_WORK");
    await append(stream, { n: 2 });
    const second = await until(
      () => claim("pull-a", "w2"),
      (answer) => answer.status === 200,
    );
    expect((second.body as unknown as Claim).generation).toBe(2);
    await control("subscriptions/pull-a", { method: "DELETE" });
  });

  it("survives a crash between claim and ack: the lease ends, the next claim gets the same data, and an idempotent consumer applies it once", async () => {
    const stream = "pull/crash";
    await createStream(stream);
    await pullSubscription("pull-crash", [stream], "wakes/crash");
    await append(stream, { n: 0 }, { n: 1 }, { n: 2 });
    const applied = new Map<number, number>();
    const take = (held: Claim) => {
      const link = held.streams[0] as Claim["streams"][number];
      const from = Number(link.acked_offset.split("_")[0]);
      const to = Number(link.tail_offset.split("_")[0]);
      // Keyed by seq: a chunk seen again is not applied again.
      for (let seq = from; seq < to; seq++) if (!applied.has(seq)) applied.set(seq, 1);
      return to;
    };
    const first = (
      await until(
        () => claim("pull-crash", "w1"),
        (a) => a.status === 200,
      )
    ).body as unknown as Claim;
    take(first);
    // The worker dies before its ack, and so does the hub.
    await abortAllDurableObjects();
    await hub().skew(2_000);
    expect(await runDurableObjectAlarm(hub())).toBe(true);
    // The lease ran out: the worker's late ack is fenced.
    const late = await control("subscriptions/pull-crash/ack", {
      method: "POST",
      token: first.token,
      body: { wake_id: first.wake_id, generation: first.generation, acks: [], done: true },
    });
    expect(late.status).toBe(409);
    expect((late.body.error as { code: string }).code).toBe("FENCED");
    const again = (await claim("pull-crash", "w2")).body as unknown as Claim;
    expect(again.generation).toBe(first.generation + 1);
    const to = take(again);
    const ack = await control("subscriptions/pull-crash/ack", {
      method: "POST",
      token: again.token,
      body: {
        wake_id: again.wake_id,
        generation: again.generation,
        acks: [{ stream, offset: offset(to) }],
        done: true,
      },
    });
    expect(ack.status).toBe(200);
    expect([...applied.keys()]).toEqual([0, 1, 2]);
    await hub().skew(0);
    await control("subscriptions/pull-crash", { method: "DELETE" });
  });

  it("refuses forged, foreign, unsigned and stale tokens with coded errors, changing nothing", async () => {
    const stream = "pull/forged";
    await createStream(stream);
    await pullSubscription("pull-forged", [stream], "wakes/forged");
    await pullSubscription("pull-other", [stream], "wakes/other");
    await append(stream, { n: 0 });
    const held = (
      await until(
        () => claim("pull-forged", "w1"),
        (a) => a.status === 200,
      )
    ).body as unknown as Claim;
    const other = (
      await until(
        () => claim("pull-other", "w1"),
        (a) => a.status === 200,
      )
    ).body as unknown as Claim;
    const body = {
      wake_id: held.wake_id,
      generation: held.generation,
      acks: [{ stream, offset: offset(1) }],
      done: true,
    };
    const [payload, mac] = held.token.split(".") as [string, string];
    const forgedPayload = btoa(
      JSON.stringify({ s: "pull-forged", g: held.generation, w: held.wake_id, e: 9_999_999_999 }),
    ).replace(/=+$/, "");
    const cases: [string | undefined, string, number][] = [
      [undefined, "TOKEN_INVALID", 401],
      ["", "TOKEN_INVALID", 401],
      [`${payload}.${mac.slice(0, -2)}AA`, "TOKEN_INVALID", 401],
      [`${forgedPayload}.${mac}`, "TOKEN_INVALID", 401],
      [other.token, "TOKEN_INVALID", 401],
      ["x".repeat(5000), "TOKEN_INVALID", 401],
    ];
    for (const [token, code, status] of cases) {
      const answer = await control("subscriptions/pull-forged/ack", {
        method: "POST",
        body,
        ...(token === undefined ? {} : { token }),
      });
      expect([answer.status, (answer.body.error as { code: string }).code]).toEqual([status, code]);
    }
    // A genuine token with another wake's id or generation is fenced.
    for (const stale of [
      { ...body, generation: held.generation - 1 },
      { ...body, wake_id: "w_000000000000000000000000" },
    ]) {
      const answer = await control("subscriptions/pull-forged/ack", {
        method: "POST",
        token: held.token,
        body: stale,
      });
      expect(answer.status).toBe(409);
      expect((answer.body.error as { code: string }).code).toBe("FENCED");
    }
    // Bad acks: past the tail, backwards, unknown stream, not an offset.
    for (const acks of [
      [{ stream, offset: offset(5) }],
      [{ stream: "pull/unknown", offset: offset(1) }],
      [{ stream, offset: "-1" }],
      [{ stream, offset: "garbage" }],
    ]) {
      const answer = await control("subscriptions/pull-forged/ack", {
        method: "POST",
        token: held.token,
        body: { ...body, acks },
      });
      expect(answer.status).toBe(409);
      expect((answer.body.error as { code: string }).code).toBe("INVALID_OFFSET");
    }
    // Nothing moved: the wake is still held, nothing acknowledged.
    const view = await control("subscriptions/pull-forged");
    expect(view.body.wake).toMatchObject({ wake_id: held.wake_id, holder: "w1" });
    expect((view.body.streams as { acked_offset: string }[])[0]?.acked_offset).toBe(offset(0));
    // A genuine token older than an hour has expired.
    await hub().skew(3_601_000);
    const expired = await control("subscriptions/pull-forged/ack", {
      method: "POST",
      token: held.token,
      body,
    });
    expect([expired.status, (expired.body.error as { code: string }).code]).toEqual([
      401,
      "TOKEN_EXPIRED",
    ]);
    await hub().skew(0);
    // The genuine ack still works.
    const ok = await control("subscriptions/pull-forged/ack", {
      method: "POST",
      token: held.token,
      body,
    });
    expect(ok.status).toBe(200);
    // A release of a closed wake is fenced too.
    const release = await control("subscriptions/pull-forged/release", {
      method: "POST",
      token: held.token,
      body: { wake_id: held.wake_id, generation: held.generation },
    });
    expect(release.status).toBe(409);
    await control("subscriptions/pull-forged", { method: "DELETE" });
    await control("subscriptions/pull-other", { method: "DELETE" });
  });
});
