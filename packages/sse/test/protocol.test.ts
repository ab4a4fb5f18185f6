import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { formatOffset } from "../src/index";
import { bodyText, freshStub, readChunks, sleep } from "./helpers";

const ORIGIN = "https://streams.test";
type Stub = ReturnType<typeof freshStub>;

function call(stub: Stub, path: string, init?: RequestInit): Promise<Response> {
  return stub.fetch(`${ORIGIN}/v1/stream/${path}`, init);
}
const put = (stub: Stub, path: string, headers: Record<string, string> = {}, body?: BodyInit) =>
  call(stub, path, { method: "PUT", headers, ...(body === undefined ? {} : { body }) });
const post = (stub: Stub, path: string, headers: Record<string, string>, body?: BodyInit) =>
  call(stub, path, { method: "POST", headers, ...(body === undefined ? {} : { body }) });
const text = { "Content-Type": "text/plain" };
const json = { "Content-Type": "application/json" };

describe("Durable Streams protocol: create, append, read", () => {
  it("creates a stream, appends, and reads it back with offsets derived from seqs", async () => {
    const stub = freshStub();
    const created = await put(stub, "a", text, "hello");
    expect(created.status).toBe(201);
    expect(created.headers.get("Location")).toBe(`${ORIGIN}/v1/stream/a`);
    expect(created.headers.get("Stream-Next-Offset")).toBe(formatOffset(1));
    expect(created.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect((await put(stub, "a", text)).status).toBe(200);
    expect((await put(stub, "a", json)).status).toBe(409);

    const appended = await post(stub, "a", text, " world");
    expect(appended.status).toBe(204);
    expect(appended.headers.get("Stream-Next-Offset")).toBe(formatOffset(2));

    const all = await call(stub, "a");
    expect(await all.text()).toBe("hello world");
    expect(all.headers.get("Stream-Up-To-Date")).toBe("true");
    expect(all.headers.get("Stream-Next-Offset")).toBe(formatOffset(2));
    const rest = await call(stub, `a?offset=${formatOffset(1)}`);
    expect(await rest.text()).toBe(" world");
    const again = await call(stub, "a", { headers: { "If-None-Match": all.headers.get("ETag")! } });
    expect(again.status).toBe(304);
    expect((await call(stub, "a?offset=0,1")).status).toBe(400);
    expect((await call(stub, `a?offset=${formatOffset(3)}`)).status).toBe(400);
    expect((await call(stub, "missing")).status).toBe(404);
  });

  it("stores JSON messages exactly, flattening one array level per POST", async () => {
    const stub = freshStub();
    expect((await put(stub, "j", json, "[]")).status).toBe(201);
    expect((await post(stub, "j", json, '[{"a":1}, 12345678901234567890]')).status).toBe(204);
    expect((await post(stub, "j", json, "[[1,2]]")).status).toBe(204);
    expect((await post(stub, "j", json, "[]")).status).toBe(400);
    expect((await post(stub, "j", json, "{ nope }")).status).toBe(400);
    expect((await post(stub, "j", text, "x")).status).toBe(409);
    expect(await (await call(stub, "j")).text()).toBe('[{"a":1},12345678901234567890,[1,2]]');
    expect(await (await call(stub, "j?offset=now")).text()).toBe("[]");
  });

  it("enforces Stream-Seq order and idempotent producers through the log's fencing", async () => {
    const stub = freshStub();
    await put(stub, "p", text);
    const producer = (epoch: number, seq: number) => ({
      ...text,
      "Producer-Id": "w1",
      "Producer-Epoch": String(epoch),
      "Producer-Seq": String(seq),
    });
    expect((await post(stub, "p", producer(0, 0), "a")).status).toBe(200);
    const dup = await post(stub, "p", producer(0, 0), "a");
    expect(dup.status).toBe(204);
    expect(dup.headers.get("Producer-Seq")).toBe("0");
    const gap = await post(stub, "p", producer(0, 2), "c");
    expect(gap.status).toBe(409);
    expect(gap.headers.get("Producer-Expected-Seq")).toBe("1");
    expect((await post(stub, "p", producer(1, 0), "b")).status).toBe(200);
    const zombie = await post(stub, "p", producer(0, 1), "z");
    expect(zombie.status).toBe(403);
    expect(zombie.headers.get("Producer-Epoch")).toBe("1");
    expect((await post(stub, "p", producer(2, 3), "z")).status).toBe(400);
    expect((await post(stub, "p", { ...text, "Producer-Id": "w1" }, "z")).status).toBe(400);
    expect((await post(stub, "p", { ...text, "Stream-Seq": "2" }, "x")).status).toBe(204);
    expect((await post(stub, "p", { ...text, "Stream-Seq": "10" }, "y")).status).toBe(409);
    expect(await (await call(stub, "p")).text()).toBe("abx");
  });

  it("closes atomically with a final append and reports EOF in every read mode", async () => {
    const stub = freshStub();
    await put(stub, "c", text, "one");
    const closed = await post(stub, "c", { ...text, "Stream-Closed": "true" }, "two");
    expect(closed.status).toBe(204);
    expect(closed.headers.get("Stream-Closed")).toBe("true");
    const tail = closed.headers.get("Stream-Next-Offset")!;
    expect((await post(stub, "c", { "Stream-Closed": "true" })).status).toBe(204);
    const late = await post(stub, "c", text, "three");
    expect(late.status).toBe(409);
    expect(late.headers.get("Stream-Next-Offset")).toBe(tail);

    const eof = await call(stub, `c?offset=${tail}`);
    expect(await eof.text()).toBe("");
    expect(eof.headers.get("Stream-Closed")).toBe("true");
    const poll = await call(stub, `c?offset=${tail}&live=long-poll`);
    expect(poll.status).toBe(204);
    expect(poll.headers.get("Stream-Closed")).toBe("true");
    const sse = await bodyText(await call(stub, "c?offset=-1&live=sse"));
    expect(sse).toBe(
      `event: data\ndata:onetwo\n\nevent: control\ndata:{"streamNextOffset":"${tail}","streamClosed":true,"upToDate":true}\n\n`,
    );
  });

  it("wakes a long-poll on an append and times out with 204 and a cursor otherwise", async () => {
    const stub = freshStub();
    await put(stub, "l", text);
    const tail = formatOffset(0);
    const idle = await call(stub, `l?offset=${tail}&live=long-poll`);
    expect(idle.status).toBe(204);
    expect(idle.headers.get("Stream-Up-To-Date")).toBe("true");
    expect(idle.headers.get("Stream-Cursor")).toMatch(/^\d+$/);
    const waiting = call(stub, `l?offset=${tail}&live=long-poll`);
    await sleep(50);
    await post(stub, "l", text, "news");
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(await woken.text()).toBe("news");
  });

  it("frames SSE as a data event then a control event per read, escaping line breaks", async () => {
    const stub = freshStub();
    await put(stub, "s", text, "a\r\n\r\nevent: control\ndata: x");
    const response = await call(stub, "s?offset=-1&live=sse");
    expect(response.headers.get("Content-Type")).toBe("text/event-stream");
    const { text: first, reader } = await readChunks(response, (seen) => seen.includes("upToDate"));
    expect(first).toMatch(
      /^event: data\ndata:a\ndata:\ndata:event: control\ndata:data: x\n\nevent: control\ndata:\{"streamNextOffset":"0000000000000001_0000000000000000","streamCursor":"\d+","upToDate":true\}\n\n$/,
    );
    await post(stub, "s", text, "b");
    const { text: next } = await readChunks(
      new Response(
        new ReadableStream({
          start: async (controller) => {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              controller.enqueue(value);
              if (new TextDecoder().decode(value).includes("0000000000000002")) break;
            }
            controller.close();
          },
        }),
      ),
    );
    expect(next).toContain("event: data\ndata:b\n\n");
    await reader.cancel();
  });
});

describe("Durable Streams protocol: forks", () => {
  it("copies the inherited range, soft-deletes a referenced source and collects it with the last fork", async () => {
    const stub = freshStub();
    await put(stub, "src", text, "hello");
    await post(stub, "src", text, " world");
    const fork = await put(stub, "fork", {
      "Stream-Forked-From": "/v1/stream/src",
      "Stream-Fork-Offset": formatOffset(1),
      "Stream-Fork-Sub-Offset": "3",
    });
    expect(fork.status).toBe(201);
    expect(fork.headers.get("Content-Type")).toBe("text/plain");
    expect(await (await call(stub, "fork")).text()).toBe("hello wo");
    expect(
      (
        await put(stub, "fork", {
          "Stream-Forked-From": "/v1/stream/src",
          "Stream-Fork-Sub-Offset": "3",
        })
      ).status,
    ).toBe(200);
    await post(stub, "fork", text, "rk");
    expect(await (await call(stub, "fork")).text()).toBe("hello work");

    expect((await call(stub, "src", { method: "DELETE" })).status).toBe(204);
    expect((await call(stub, "src", { method: "HEAD" })).status).toBe(410);
    expect((await put(stub, "src", text)).status).toBe(409);
    expect((await put(stub, "other", { "Stream-Forked-From": "/v1/stream/src" })).status).toBe(409);
    expect((await call(stub, "fork", { method: "DELETE" })).status).toBe(204);
    expect((await call(stub, "src", { method: "HEAD" })).status).toBe(404);
  });

  it("forks across objects through peers and cascades collection up a chain", async () => {
    const objects = new Map<string, DurableObjectStub>();
    const at = (id: string) => {
      let stub = objects.get(id);
      if (stub === undefined) {
        stub = env.PER_STREAM.getByName(id) as unknown as DurableObjectStub;
        objects.set(id, stub);
      }
      return stub;
    };
    const id = crypto.randomUUID();
    const [l0, l1, l2] = [`l0-${id}`, `l1-${id}`, `l2-${id}`];
    const req = (name: string, init?: RequestInit) =>
      at(name).fetch(`${ORIGIN}/v1/stream/${name}`, init);
    await req(l0, { method: "PUT", headers: json, body: '[{"n":0},{"n":1}]' });
    await req(l1, { method: "PUT", headers: { "Stream-Forked-From": `/v1/stream/${l0}` } });
    await req(l1, { method: "POST", headers: json, body: '{"n":2}' });
    await req(l2, { method: "PUT", headers: { "Stream-Forked-From": `/v1/stream/${l1}` } });
    expect(await (await req(l2)).json()).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);

    await req(l0, { method: "DELETE" });
    await req(l1, { method: "DELETE" });
    expect((await req(l0, { method: "HEAD" })).status).toBe(410);
    expect((await req(l1, { method: "HEAD" })).status).toBe(410);
    expect((await req(l2, { method: "DELETE" })).status).toBe(204);
    expect((await req(l1, { method: "HEAD" })).status).toBe(404);
    expect((await req(l0, { method: "HEAD" })).status).toBe(404);
  });

  it("keeps a failed release in the outbox and delivers it from the alarm", async () => {
    const id = crypto.randomUUID();
    const [src, fork] = [`src-${id}`, `fork-${id}`];
    const source = env.PER_STREAM.getByName(src);
    const forkStub = env.PER_STREAM.getByName(fork);
    await source.fetch(`${ORIGIN}/v1/stream/${src}`, { method: "PUT", headers: text, body: "x" });
    await forkStub.fetch(`${ORIGIN}/v1/stream/${fork}`, {
      method: "PUT",
      headers: { "Stream-Forked-From": `/v1/stream/${src}` },
    });
    await source.fetch(`${ORIGIN}/v1/stream/${src}`, { method: "DELETE" });
    await source.setFailReleases(1);
    expect((await forkStub.fetch(`${ORIGIN}/v1/stream/${fork}`, { method: "DELETE" })).status).toBe(
      204,
    );
    expect((await source.fetch(`${ORIGIN}/v1/stream/${src}`, { method: "HEAD" })).status).toBe(410);
    const pending = await runInDurableObject(forkStub, (instance) =>
      instance.protocol.nextWakeAt(),
    );
    expect(pending).not.toBeNull();
    await runInDurableObject(forkStub, async (_instance, state) => {
      state.storage.sql.exec("UPDATE dk_sse_releases SET due_at = 0");
    });
    await runDurableObjectAlarm(forkStub);
    expect((await source.fetch(`${ORIGIN}/v1/stream/${src}`, { method: "HEAD" })).status).toBe(404);
    expect(
      await runInDurableObject(forkStub, (instance) => instance.protocol.nextWakeAt()),
    ).toBeNull();
  });
});

describe("Durable Streams protocol: a read-only source (the sources option)", () => {
  it("serves a source's log as a JSON stream: catch-up, HEAD, long-poll and SSE, closed when it settles; writes refused", async () => {
    const stub = freshStub();
    // The source's log: a JSON stream the object writes through its Streams.
    const write = (n: number, close = false) =>
      runInDurableObject(stub, ({ streams }) => {
        const writer = streams.open("src");
        writer.append({ n });
        if (close) writer.close();
      });
    await write(1);
    await write(2);
    const all = await call(stub, "mirror/src");
    expect(all.status).toBe(200);
    expect(all.headers.get("Content-Type")).toBe("application/json");
    expect(all.headers.get("Stream-Next-Offset")).toBe(formatOffset(2));
    expect(all.headers.get("Stream-Up-To-Date")).toBe("true");
    expect(await all.json()).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await (await call(stub, `mirror/src?offset=${formatOffset(1)}`)).json()).toEqual([
      { n: 2 },
    ]);
    const head = await call(stub, "mirror/src", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("Stream-Next-Offset")).toBe(formatOffset(2));
    expect(head.headers.get("Stream-Closed")).toBeNull();

    // A long-poll at the tail wakes on the log's next write.
    const waiting = call(stub, `mirror/src?offset=${formatOffset(2)}&live=long-poll`);
    await sleep(50);
    await write(3, true);
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(await woken.json()).toEqual([{ n: 3 }]);

    // SSE from the start ends with streamClosed once the log settled.
    const sse = await bodyText(await call(stub, "mirror/src?offset=-1&live=sse"));
    expect(sse).toBe(
      `event: data\ndata:[{"n":1},{"n":2},{"n":3}]\n\nevent: control\ndata:{"streamNextOffset":"${formatOffset(3)}","streamClosed":true,"upToDate":true}\n\n`,
    );
    expect((await call(stub, "mirror/src")).headers.get("Stream-Closed")).toBe("true");

    for (const method of ["PUT", "POST", "DELETE"]) {
      const refused = await call(stub, "mirror/src", { method });
      expect(refused.status).toBe(405);
      expect(refused.headers.get("Allow")).toBe("GET, HEAD, OPTIONS");
    }
    expect((await call(stub, "mirror/missing")).status).toBe(404);
    expect((await call(stub, "mirror/missing", { method: "HEAD" })).status).toBe(404);
    // The source's log is untouched by the refused writes.
    const cursor = await runInDurableObject(stub, ({ streams }) => streams.status("src")?.cursor);
    expect(cursor).toBe(3);
  });
});
