import type { AlarmPart } from "@durablekit/compose";
import { Streams } from "@durablekit/streams";
import { anotherInstance, BAD_NAMES, thrownCode } from "@durablekit/test-kit";
import { describe, expect, expectTypeOf, it, vi } from "vitest";
import {
  DurableStreamsHandler,
  formatOffset,
  isSseError,
  parseOffset,
  resumeFrom,
  SseError,
  type SseEvent,
  sseResponse,
} from "../src/index";
import { inFixture } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCode(fn, isSseError);

describe("bad input", () => {
  it("the handler is an AlarmPart", () => {
    expectTypeOf<DurableStreamsHandler>().toMatchTypeOf<AlarmPart>();
  });

  it("refuses a malformed constructor argument or option with sse/invalid-argument", async () => {
    await inFixture(async ({ streams }, state) => {
      const attempts: (() => unknown)[] = [
        () => new DurableStreamsHandler(undefined as never, { streams }),
        () => new DurableStreamsHandler({} as never, { streams }),
        () => new DurableStreamsHandler(state, undefined as never),
        () => new DurableStreamsHandler(state, {} as never),
        () => new DurableStreamsHandler(state, { streams: {} as never }),
        () => new DurableStreamsHandler(state, streams as never),
        () => new DurableStreamsHandler(state, { streams, basePath: "v1" }),
        () => new DurableStreamsHandler(state, { streams, basePath: 5 as never }),
        () => new DurableStreamsHandler(state, { streams, longPollTimeoutMs: 0 }),
        () => new DurableStreamsHandler(state, { streams, sseConnectionMs: -1 }),
        () => new DurableStreamsHandler(state, { streams, maxReadBytes: Number.NaN }),
        () => new DurableStreamsHandler(state, { streams, maxForkBytes: "1" as never }),
        () => new DurableStreamsHandler(state, { streams, cursorIntervalMs: 0 }),
        () => new DurableStreamsHandler(state, { streams, maxWriteBytes: 0 }),
        () => new DurableStreamsHandler(state, { streams, maxWriteBytes: 1.5 }),
        () =>
          new DurableStreamsHandler(state, { streams, maxWriteBytes: Number.POSITIVE_INFINITY }),
        () => new DurableStreamsHandler(state, { streams, maxWriteMessages: -1 }),
        () => new DurableStreamsHandler(state, { streams, maxWriteMessages: Number.NaN }),
        () => new DurableStreamsHandler(state, { streams, maxWriteMessages: "10" as never }),
        () => new DurableStreamsHandler(state, { streams, now: 5 as never }),
        () => new DurableStreamsHandler(state, { streams, peer: {} as never }),
        () => new DurableStreamsHandler(state, { streams, onEvent: "log" as never }),
        () => new DurableStreamsHandler(state, { streams, sources: 5 as never }),
        () => new DurableStreamsHandler(state, { streams, sources: { "a/b": streams } }),
        () => new DurableStreamsHandler(state, { streams, sources: { "": streams } }),
        () => new DurableStreamsHandler(state, { streams, sources: { __ds: streams } }),
        () => new DurableStreamsHandler(state, { streams, sources: { runs: {} as never } }),
      ];
      for (const attempt of attempts) {
        expect(await codeOf(attempt), attempt.toString()).toBe("sse/invalid-argument");
      }
    });
  });

  it("refuses malformed fork peer calls with sse/invalid-argument", async () => {
    await inFixture(async ({ protocol }) => {
      const attempts: (() => unknown)[] = [];
      for (const name of BAD_NAMES) {
        attempts.push(
          () => protocol.exportFork(name as string, { ref: "r" }),
          () => protocol.exportFork("s", { ref: name as string }),
          () => protocol.releaseFork(name as string, "r"),
          () => protocol.releaseFork("s", name as string),
        );
      }
      attempts.push(() => protocol.exportFork("s", null as never));
      for (const attempt of attempts) {
        expect(await codeOf(attempt), attempt.toString()).toBe("sse/invalid-argument");
      }
      expect(protocol.nextWakeAt()).toBeNull();
    });
  });

  it("answers malformed requests with 4xx, never a throw", async () => {
    await inFixture(async ({ protocol }) => {
      const statuses = [];
      for (const request of [
        new Request("https://x/elsewhere"),
        new Request(`https://x/v1/stream/${"x".repeat(300)}`),
        new Request("https://x/v1/stream/%ED%A0%80"),
        new Request("https://x/v1/stream/s", { method: "PATCH" }),
        new Request("https://x/v1/stream/s?offset=garbage"),
      ]) {
        statuses.push((await protocol.fetch(request)).status);
      }
      expect(statuses.every((status) => status >= 400 && status < 500)).toBe(true);
      expect(protocol.streamIdOf("not a url")).toBeNull();
    });
  });

  it("refuses malformed sseResponse and helper arguments with sse/invalid-argument", async () => {
    await inFixture(async ({ streams }) => {
      streams.open("s");
      const attempts: (() => unknown)[] = [
        () => sseResponse(undefined as never, "s"),
        () => sseResponse({} as never, "s"),
        () => sseResponse(streams, "s", null as never),
        () => sseResponse(streams, "s", { heartbeatMs: -1 }),
        () => sseResponse(streams, "s", { heartbeatMs: "5" as never }),
        () => sseResponse(streams, "s", { batchSize: 0 }),
        () => sseResponse(streams, "s", { from: Number.NaN }),
        () => sseResponse(streams, "s", { request: {} as never }),
        () => sseResponse(streams, "s", { signal: {} as never }),
        () => sseResponse(streams, "s", { waitForStreamMs: -1 }),
        () => sseResponse(streams, "s", { waitForStreamMs: Number.NaN }),
        () => sseResponse(streams, "s", { waitForStreamMs: "5" as never }),
        () => sseResponse(streams, "s", { cors: null as never }),
        () => sseResponse(streams, "s", { cors: {} as never }),
        () => sseResponse(streams, "s", { cors: { origin: "https://app.example" as never } }),
        () => sseResponse(streams, "s", { cors: { origin: ["https://app.example/"] } }),
        () => sseResponse(streams, "s", { cors: { origin: ["app.example"] } }),
        () => resumeFrom(null as never),
        () => resumeFrom({ from: Number.POSITIVE_INFINITY }),
        () => resumeFrom({ request: "https://x" as never }),
        () => formatOffset(-1),
        () => formatOffset(Number.NaN),
        () => formatOffset(1.5),
      ];
      for (const attempt of attempts) {
        expect(await codeOf(attempt), attempt.toString()).toBe("sse/invalid-argument");
      }
      expect(parseOffset(5 as never).kind).toBe("invalid");
    });
  });

  it("refuses tables written by a newer version with sse/schema-too-new", async () => {
    await inFixture(async ({ streams, protocol }, state) => {
      // Forking creates the dk_sse_* tables.
      streams.open("src").append("a");
      expect(
        (
          await protocol.fetch(
            new Request("https://x/v1/stream/fork", {
              method: "PUT",
              headers: { "Stream-Forked-From": "/v1/stream/src" },
            }),
          )
        ).status,
      ).toBe(201);
      state.storage.sql.exec("UPDATE dk_sse_meta SET value = 99 WHERE name = 'schema_version'");
      const fresh = new DurableStreamsHandler(state, {
        streams: new Streams(anotherInstance(state)),
      });
      let caught: unknown;
      try {
        fresh.nextWakeAt();
      } catch (error) {
        caught = error;
      }
      expect(isSseError(caught, "sse/schema-too-new")).toBe(true);
      expect(caught).toBeInstanceOf(SseError);
      state.storage.sql.exec("UPDATE dk_sse_meta SET value = 1 WHERE name = 'schema_version'");
    });
  });

  it("reports a request that failed unexpectedly as sse:request-failed, and a throwing listener with console.warn", async () => {
    await inFixture(async (_fixture, state) => {
      const events: SseEvent[] = [];
      const streams = new Streams(anotherInstance(state));
      const broken = new Proxy(streams, {
        get(target, key) {
          if (key === "status") {
            return () => {
              throw new Error("storage fell over");
            };
          }
          const value = Reflect.get(target, key, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const protocol = new DurableStreamsHandler(state, {
        streams: broken,
        onEvent: (event) => events.push(event),
      });
      const response = await protocol.fetch(new Request("https://x/v1/stream/s"));
      expect(response.status).toBe(500);
      expect(events).toMatchObject([
        { type: "sse:request-failed", method: "GET", url: "https://x/v1/stream/s" },
      ]);

      const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
      try {
        const throwing = new DurableStreamsHandler(state, {
          streams: broken,
          onEvent: () => {
            throw new Error("listener broke");
          },
        });
        expect((await throwing.fetch(new Request("https://x/v1/stream/s"))).status).toBe(500);
        expect(String(warn.mock.calls[0]?.[0])).toMatch(/@durablekit\/sse/);
      } finally {
        warn.mockRestore();
      }
    });
  });
});
