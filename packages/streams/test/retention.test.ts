import { runDurableObjectAlarm } from "cloudflare:test";
import { countingState } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isStreamsError, Streams } from "../src/index";
import { collect, freshStub, inFixture, settle } from "./helpers";

describe("retention", () => {
  it("expires a stream ttlMs after its last append, through the host's alarm", async () => {
    const stub = freshStub("ttl");
    const openedAt = await inFixture(async ({ streams, clockOffset }, state) => {
      const at = Date.now() + clockOffset;
      expect(await state.storage.getAlarm()).toBeNull();
      streams.open("s", { ttlMs: 1000 }).append("a");
      // The new stream asked for its wake itself (requestWake, earlier-only).
      await settle();
      expect(await state.storage.getAlarm()).toBe(streams.nextWakeAt());
      expect(streams.nextWakeAt()).toBeGreaterThanOrEqual(at + 1000);
      return at;
    }, stub);
    await inFixture((fixture) => {
      fixture.clockOffset += 600;
      fixture.streams.open("s").append("b"); // slides the TTL; writes only the chunk row
    }, stub);
    await inFixture((fixture) => {
      fixture.clockOffset += 600; // 1,200 ms after open, 600 ms after the last append
    }, stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture(({ streams, events }) => {
      expect(streams.status("s")).toMatchObject({ state: "streaming", cursor: 2 });
      expect(events.some((e) => e.type === "stream:expired")).toBe(false);
      // The sweep found the wake early and moved it to the true expiry.
      expect(streams.nextWakeAt()).toBeGreaterThanOrEqual(openedAt + 1600);
    }, stub);
    await inFixture((fixture) => {
      fixture.clockOffset += 500;
    }, stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture(async ({ streams, events }, state) => {
      expect(streams.status("s")).toBeNull();
      expect(events.filter((e) => e.type === "stream:expired")).toEqual([
        { type: "stream:expired", streamId: "s" },
      ]);
      await expect(collect(streams.read("s"))).rejects.toSatisfy((e) =>
        isStreamsError(e, "streams/not-found"),
      );
      expect(state.storage.sql.exec("SELECT * FROM dk_streams_chunks").toArray()).toEqual([]);
      expect(streams.nextWakeAt()).toBeNull();
    }, stub);
    // Nothing left to wake for: the host's alarm was not re-armed.
    expect(await runDurableObjectAlarm(stub)).toBe(false);
  });

  it("expires a settled stream ttlMs after it settled", async () => {
    const stub = freshStub("ttl-settled");
    await inFixture((fixture) => {
      const writer = fixture.streams.open("s", { ttlMs: 1000 });
      writer.append("a");
      fixture.clockOffset += 900;
      writer.close();
      fixture.clockOffset += 900;
    }, stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture((fixture) => {
      expect(fixture.streams.status("s")).toMatchObject({ state: "completed" });
      fixture.clockOffset += 200;
    }, stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture(({ streams }) => {
      expect(streams.status("s")).toBeNull();
    }, stub);
  });

  it("treats an expired stream as gone before the sweep runs, and open() replaces it", async () => {
    await inFixture(async (fixture) => {
      const { streams, events } = fixture;
      const old = streams.open("s", { ttlMs: 1000, tag: "old" });
      old.append("stale");
      fixture.clockOffset += 1001;
      expect(streams.status("s")).toBeNull();
      expect(streams.touch("s")).toBe(false);
      expect(() => streams.readPage("s")).toThrowError(/does not exist/);
      expect(streams.list().items).toEqual([]);
      const fresh = streams.open("s", { contentType: "text/plain" });
      expect(fresh).toMatchObject({ created: true, cursor: 0 });
      expect(streams.status("s")).toMatchObject({ encoding: "text", cursor: 0 });
      expect(events.map((e) => e.type)).toEqual([
        "stream:opened",
        "stream:appended",
        "stream:expired",
        "stream:opened",
      ]);
      expect(() => old.append("late")).toThrowError(/was deleted/);
    });
  });

  it("expires at an absolute expiresAt, whatever the activity", async () => {
    const stub = freshStub("expires-at");
    await inFixture((fixture) => {
      const expiresAt = Date.now() + fixture.clockOffset + 5000;
      const writer = fixture.streams.open("s", { expiresAt: new Date(expiresAt), ttlMs: 60_000 });
      expect(fixture.streams.status("s")?.expiresAt).toBe(expiresAt);
      fixture.clockOffset += 4000;
      writer.append("busy");
      fixture.clockOffset += 1100;
    }, stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture(({ streams }) => {
      expect(streams.status("s")).toBeNull();
    }, stub);
  });

  it("extends a sliding TTL on touch", async () => {
    await inFixture(async (fixture) => {
      const { streams, events } = fixture;
      const expired = () =>
        events.flatMap((event) => (event.type === "stream:expired" ? [event.streamId] : []));
      streams.open("s", { ttlMs: 1000 });
      streams.open("plain");
      fixture.clockOffset += 800;
      expect(streams.touch("s")).toBe(true);
      expect(streams.touch("plain")).toBe(true);
      fixture.clockOffset += 800;
      await streams.alarm();
      expect(expired()).toEqual([]);
      expect(streams.status("s")?.updatedAt).toBeLessThanOrEqual(
        Date.now() + fixture.clockOffset - 800,
      );
      fixture.clockOffset += 300;
      await streams.alarm();
      expect(expired()).toEqual(["s"]);
      expect(streams.nextWakeAt()).toBeNull();
      expect(streams.status("plain")).not.toBeNull();
    });
  });

  it("decides a sweep from stream rows and a live stream's newest chunk, never scanning chunks", async () => {
    await inFixture(async (_fixture, state) => {
      let now = Date.now();
      const counting = countingState(state);
      const writerSide = new Streams(counting.state, { now: () => now });
      for (let i = 0; i < 8; i++) {
        const writer = writerSide.open(`s${i}`, { ttlMs: 1000 });
        writer.appendMany(Array.from({ length: 300 }, (_, n) => ({ n })));
        if (i % 2 === 0) writer.close();
      }
      now += 2000;
      // A new instance remembers nothing, as after a restart.
      const expired: string[] = [];
      const sweeper = new Streams(counting.state, {
        now: () => now,
        onEvent: (event) => {
          if (event.type === "stream:expired") expired.push(event.streamId);
        },
      });
      sweeper.nextWakeAt();
      counting.reset();
      await sweeper.alarm();
      expect(expired).toHaveLength(8);
      const deciding = counting.counts(0, (query) => !query.trimStart().startsWith("DELETE"));
      // 2,400 chunks are stored; deciding reads one row per stream, plus the newest chunk of each
      // of the 4 live ones (and at most one more read).
      expect(deciding.rowsRead).toBeLessThanOrEqual(8 + 4 + 1);
      expect(counting.counts().rowsWritten).toBeGreaterThanOrEqual(8 * 300);
    });
  });

  it("asks for an earlier wake when a stream gains an earlier expiry, and never pushes the alarm later", async () => {
    await inFixture(async ({ streams }, state) => {
      streams.open("late", { ttlMs: 10_000 });
      await settle();
      const late = await state.storage.getAlarm();
      expect(late).toBe(streams.nextWakeAt());
      streams.open("early", { ttlMs: 1_000 });
      await settle();
      const early = await state.storage.getAlarm();
      expect(early).toBe(streams.nextWakeAt());
      expect(early).toBeLessThan(late as number);
      streams.open("later", { ttlMs: 60_000 });
      const settling = streams.open("settles", { ttlMs: 120_000 });
      settling.close();
      await settle();
      expect(await state.storage.getAlarm()).toBe(early);
    });
  });
});
