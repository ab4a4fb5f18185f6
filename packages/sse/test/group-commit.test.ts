import { evictDurableObject } from "cloudflare:test";
import { withOverrides } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { DurableStreamsHandler } from "../src/index";
import { freshStub, inFixture, sleep } from "./helpers";

const ORIGIN = "https://streams.test";
const json = { "Content-Type": "application/json" };

/**
 * The object's state with `storage.sync()` held at a gate per call: each sync waits until the
 * test opens its gate, then for the real commit. `syncs` counts the calls.
 */
function gatedState(state: DurableObjectState) {
  const gates: Array<() => void> = [];
  const opened: Array<Promise<void>> = [];
  let syncs = 0;
  const storage = withOverrides(state.storage, {
    sync: async () => {
      const index = syncs++;
      while (opened.length <= index) {
        opened.push(new Promise<void>((resolve) => gates.push(resolve)));
      }
      await opened[index];
      await state.storage.sync();
    },
  });
  const open = (index: number) => {
    while (gates.length <= index) opened.push(new Promise<void>((resolve) => gates.push(resolve)));
    gates[index]?.();
  };
  return { state: withOverrides(state, { storage }), open, syncs: () => syncs };
}

/** A promise with a flag that says whether it settled yet. */
function watched<T>(promise: Promise<T>) {
  const watch = { settled: false, promise };
  promise.then(
    () => (watch.settled = true),
    () => (watch.settled = true),
  );
  return watch;
}

const append = (
  handler: DurableStreamsHandler,
  body: unknown,
  producer?: { id: string; seq: number },
) =>
  handler.fetch(
    new Request(`${ORIGIN}/v1/stream/g`, {
      method: "POST",
      headers: producer
        ? {
            ...json,
            "Producer-Id": producer.id,
            "Producer-Epoch": "0",
            "Producer-Seq": String(producer.seq),
          }
        : json,
      body: JSON.stringify(body),
    }),
  );

/** Every message of stream `g`, by a catch-up read. */
async function stored(handler: DurableStreamsHandler): Promise<unknown[]> {
  const response = await handler.fetch(new Request(`${ORIGIN}/v1/stream/g?offset=-1`));
  return (await response.json()) as unknown[];
}

describe("group commit of appends", () => {
  it("answers an append only once the commit that holds it is durable", async () => {
    await inFixture(async ({ streams }, state) => {
      const gated = gatedState(state);
      const handler = new DurableStreamsHandler(gated.state, { streams });
      await handler.fetch(new Request(`${ORIGIN}/v1/stream/g`, { method: "PUT", headers: json }));
      const answer = watched(append(handler, "a", { id: "p", seq: 0 }));
      await sleep(30);
      expect(streams.status("g")?.cursor).toBe(1);
      expect(answer.settled).toBe(false);
      gated.open(0);
      expect((await answer.promise).status).toBe(200);
      expect(gated.syncs()).toBe(1);
    });
  });

  it("runs appends that arrive while a commit is in flight together after it, in arrival order, in one commit", async () => {
    await inFixture(async ({ streams }, state) => {
      const gated = gatedState(state);
      const handler = new DurableStreamsHandler(gated.state, { streams });
      await handler.fetch(new Request(`${ORIGIN}/v1/stream/g`, { method: "PUT", headers: json }));
      const first = watched(append(handler, "a"));
      await sleep(10);
      const rest = ["b", "c", "d"].map((value) => watched(append(handler, value)));
      await sleep(30);
      // Queued behind the commit in flight: nothing of theirs is written yet.
      expect(streams.status("g")?.cursor).toBe(1);
      gated.open(0);
      expect((await first.promise).status).toBe(204);
      await sleep(10);
      // Written together, and held until their own commit is durable.
      expect(streams.status("g")?.cursor).toBe(4);
      expect(rest.some((answer) => answer.settled)).toBe(false);
      gated.open(1);
      for (const answer of rest) expect((await answer.promise).status).toBe(204);
      expect(gated.syncs()).toBe(2);
      expect(await stored(handler)).toEqual(["a", "b", "c", "d"]);
    });
  });

  it("answers a refused append of a group with its own error while the others of the group are stored", async () => {
    await inFixture(async ({ streams }, state) => {
      const gated = gatedState(state);
      const handler = new DurableStreamsHandler(gated.state, { streams });
      await handler.fetch(new Request(`${ORIGIN}/v1/stream/g`, { method: "PUT", headers: json }));
      const first = append(handler, "p0", { id: "p", seq: 0 });
      await sleep(10);
      const gap = append(handler, "p5", { id: "p", seq: 5 });
      const other = append(handler, "q0", { id: "q", seq: 0 });
      const next = append(handler, "p1", { id: "p", seq: 1 });
      const retry = append(handler, "p0", { id: "p", seq: 0 });
      await sleep(30);
      gated.open(0);
      gated.open(1);
      expect((await first).status).toBe(200);
      const refused = await gap;
      expect(refused.status).toBe(409);
      expect(refused.headers.get("Producer-Expected-Seq")).toBe("1");
      expect((await other).status).toBe(200);
      expect((await next).status).toBe(200);
      expect((await retry).status).toBe(204);
      expect(await stored(handler)).toEqual(["p0", "q0", "p1"]);
    });
  });

  it("keeps arrival order inside a group: an append queued behind a close of the same group is refused as closed", async () => {
    await inFixture(async ({ streams }, state) => {
      const gated = gatedState(state);
      const handler = new DurableStreamsHandler(gated.state, { streams });
      await handler.fetch(new Request(`${ORIGIN}/v1/stream/g`, { method: "PUT", headers: json }));
      const first = append(handler, "a");
      await sleep(10);
      const close = handler.fetch(
        new Request(`${ORIGIN}/v1/stream/g`, {
          method: "POST",
          headers: { "Stream-Closed": "true" },
        }),
      );
      await sleep(10);
      const late = append(handler, "b");
      await sleep(30);
      gated.open(0);
      gated.open(1);
      expect((await first).status).toBe(204);
      expect((await close).status).toBe(204);
      const refused = await late;
      expect(refused.status).toBe(409);
      expect(refused.headers.get("Stream-Closed")).toBe("true");
      expect(await stored(handler)).toEqual(["a"]);
      expect(gated.syncs()).toBe(2);
    });
  });

  it("answers the appends of a group whose commit failed with a 500, and the group queued behind it still commits", async () => {
    await inFixture(async ({ streams }, state) => {
      const gated = gatedState(state);
      let failFirst = true;
      const storage = withOverrides(gated.state.storage, {
        sync: async () => {
          await gated.state.storage.sync();
          if (failFirst) {
            failFirst = false;
            throw new Error("commit failed for the test");
          }
        },
      });
      const handler = new DurableStreamsHandler(withOverrides(state, { storage }), { streams });
      await handler.fetch(new Request(`${ORIGIN}/v1/stream/g`, { method: "PUT", headers: json }));
      const failed = append(handler, "a");
      await sleep(10);
      const queued = [append(handler, "b"), append(handler, "c")];
      await sleep(30);
      gated.open(0);
      gated.open(1);
      expect((await failed).status).toBe(500);
      expect((await Promise.all(queued)).map((response) => response.status)).toEqual([204, 204]);
      expect(gated.syncs()).toBe(2);
    });
  });
});

describe("concurrent producers through the object", () => {
  it("stores every acknowledged append exactly once, in each producer's order, and keeps them across an eviction", async () => {
    const stub = freshStub();
    const url = `${ORIGIN}/v1/stream/many`;
    expect((await stub.fetch(url, { method: "PUT", headers: json })).status).toBe(201);
    const PRODUCERS = 10;
    const EACH = 12;
    const statuses: number[] = [];
    const send = (p: number, n: number) =>
      stub.fetch(url, {
        method: "POST",
        headers: {
          ...json,
          "Producer-Id": `p${p}`,
          "Producer-Epoch": "0",
          "Producer-Seq": String(n),
        },
        body: JSON.stringify({ p, n }),
      });
    await Promise.all(
      Array.from({ length: PRODUCERS }, async (_, p) => {
        for (let n = 0; n < EACH; n++) {
          const response = await send(p, n);
          statuses.push(response.status);
          await response.arrayBuffer();
          // A retry after a lost answer: the same (producer, seq) again, answered as a duplicate.
          if (n % 4 === 0) {
            const again = await send(p, n);
            expect(again.status).toBe(204);
            await again.arrayBuffer();
          }
        }
      }),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(PRODUCERS * EACH);
    await evictDurableObject(stub);
    const stored = (await (await stub.fetch(`${url}?offset=-1`)).json()) as Array<{
      p: number;
      n: number;
    }>;
    expect(stored).toHaveLength(PRODUCERS * EACH);
    for (let p = 0; p < PRODUCERS; p++) {
      expect(stored.filter((message) => message.p === p).map((message) => message.n)).toEqual(
        Array.from({ length: EACH }, (_, n) => n),
      );
    }
  });
});
