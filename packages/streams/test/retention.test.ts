import { runDurableObjectAlarm } from "cloudflare:test";
import { anotherInstance, countingState, thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { isStreamsError, STREAMS_SCHEMA_VERSION, Streams } from "../src/index";
import { chunkRows, collect, freshStub, inFixture, settle } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isStreamsError);

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
      // Margins of seconds: the fixture clock is real time plus an offset, so the real time these
      // calls take (under a loaded machine) must stay far below the gaps the test relies on.
      const writer = fixture.streams.open("s", { ttlMs: 10_000 });
      writer.append("a");
      fixture.clockOffset += 9_000;
      writer.close();
      fixture.clockOffset += 7_000;
    }, stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    await inFixture((fixture) => {
      expect(fixture.streams.status("s")).toMatchObject({ state: "completed" });
      fixture.clockOffset += 4_000;
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

  it("refuses an append after a sliding TTL expired, so the stream status() reported gone stays gone", async () => {
    await inFixture((fixture, state) => {
      const { streams } = fixture;
      const writer = streams.open("s", { ttlMs: 1000 });
      writer.append("a");
      fixture.clockOffset += 1001;
      expect(streams.status("s")).toBeNull();
      let caught: unknown;
      try {
        writer.append("late");
      } catch (error) {
        caught = error;
      }
      expect(caught).toMatchObject({ code: "streams/closed", state: "expired", streamId: "s" });
      expect(codeOf(() => writer.appendMany(["x", "y"]))).toBe("streams/closed");
      expect(codeOf(() => writer.close())).toBe("streams/closed");
      expect(codeOf(() => writer.error("late"))).toBe("streams/closed");
      // Nothing was written, so nothing revived the stream.
      expect(streams.status("s")).toBeNull();
      expect(chunkRows(state, "s").map((row) => row.seq)).toEqual([0]);
      expect(state.storage.sql.exec("SELECT state FROM dk_streams_streams").toArray()).toEqual([
        { state: "streaming" },
      ]);
    });
  });

  it("refuses an append after expiresAt instead of handing out a sequence number the sweep deletes", async () => {
    const stub = freshStub("expires-at-append");
    await inFixture((fixture) => {
      const expiresAt = Date.now() + fixture.clockOffset + 5000;
      const writer = fixture.streams.open("s", {
        expiresAt: new Date(expiresAt),
        producer: { id: "p", epoch: 0 },
      });
      expect(writer.append("in time")).toBe(0);
      fixture.clockOffset += 5000;
      expect(codeOf(() => writer.append("too late"))).toBe("streams/closed");
      expect(codeOf(() => writer.append("too late", { producerSeq: 1 }))).toBe("streams/closed");
      expect(codeOf(() => writer.close({ chunks: ["last"] }))).toBe("streams/closed");
      const plain = fixture.streams.open("s");
      expect(plain.created).toBe(true);
    }, stub);
  });

  it("migrates version-1 tables so their streams refuse appends after expiry and keep their producers", async () => {
    await inFixture((fixture, state) => {
      const sql = state.storage.sql;
      fixture.streams.open("s", { ttlMs: 1000, producer: { id: "p", epoch: 2 } }).append("v1");
      // Back to the version-1 shape: the old trigger, no fenced_epoch or settled_ttl_ms column.
      sql.exec("DROP TRIGGER dk_streams_chunks_fence");
      sql.exec(`CREATE TRIGGER dk_streams_chunks_fence BEFORE INSERT ON dk_streams_chunks
        BEGIN SELECT RAISE(IGNORE) WHERE NOT EXISTS (SELECT 1 FROM dk_streams_streams
          WHERE stream_key = NEW.stream_key AND state = 'streaming'); END`);
      sql.exec("ALTER TABLE dk_streams_producers DROP COLUMN fenced_epoch");
      sql.exec("ALTER TABLE dk_streams_streams DROP COLUMN settled_ttl_ms");
      sql.exec("UPDATE dk_streams_meta SET value = 1 WHERE name = 'schema_version'");
      const streams = new Streams(anotherInstance(state), {
        now: () => Date.now() + fixture.clockOffset,
      });
      expect(
        sql.exec("SELECT value FROM dk_streams_meta WHERE name = 'schema_version'").one().value,
      ).toBe(STREAMS_SCHEMA_VERSION);
      // The migrated stream keeps its retention: settledTtlMs is absent, ttlMs still applies.
      expect(streams.status("s")).toMatchObject({ ttlMs: 1000 });
      expect(streams.status("s")?.settledTtlMs).toBeUndefined();
      const writer = streams.open("s", { ttlMs: 1000, producer: { id: "p", epoch: 2 } });
      expect(writer.append("v2")).toBe(1);
      fixture.clockOffset += 1001;
      expect(codeOf(() => writer.append("late"))).toBe("streams/closed");
      expect(chunkRows(state, "s").map((row) => row.seq)).toEqual([0, 1]);
    });
  });

  it("accepts an append until the moment a stream expires", async () => {
    await inFixture((fixture) => {
      const writer = fixture.streams.open("s", { ttlMs: 1000 });
      fixture.clockOffset += 900;
      expect(writer.append("just in time")).toBe(0);
      fixture.clockOffset += 900;
      expect(writer.append("slid")).toBe(1);
      fixture.clockOffset += 1000;
      expect(codeOf(() => writer.append("at expiry"))).toBe("streams/closed");
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
      const writerSide = new Streams(anotherInstance(counting.state), { now: () => now });
      for (let i = 0; i < 8; i++) {
        const writer = writerSide.open(`s${i}`, { ttlMs: 1000 });
        writer.appendMany(Array.from({ length: 300 }, (_, n) => ({ n })));
        if (i % 2 === 0) writer.close();
      }
      now += 2000;
      // A new instance remembers nothing, as after a restart.
      const expired: string[] = [];
      const sweeper = new Streams(anotherInstance(counting.state), {
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
