import { runInDurableObject } from "cloudflare:test";
import { Tasks } from "@durablekit/tasks";
import { anotherInstance, countingState } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import {
  Inspector,
  type InspectRunView,
  type InspectStreamView,
  type InspectTruncated,
} from "../src/index";
import { events, freshStub, get, inFixture } from "./helpers";

const encoder = new TextEncoder();
const bytesOf = (text: string) => encoder.encode(text).byteLength;
const truncated = (value: unknown) => (value as InspectTruncated).$truncated;

/** Waits (running the run's own attempt in the object) until the run settles. */
async function settled(stub: ReturnType<typeof freshStub>, runId: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const state = await inFixture(({ tasks }) => tasks.get(runId)?.state, stub);
    if (state === "completed" || state === "failed") return;
    await scheduler.wait(20);
  }
  throw new Error(`run ${runId} did not settle`);
}

/**
 * UTF-8 bytes of the strings SQL returned for `statements` (each run again with its bindings: a
 * read-only SELECT answers the same rows), i.e. the bytes a read took out of SQLite.
 */
function returnedBytes(
  state: DurableObjectState,
  statements: { query: string; bindings: unknown[] }[],
) {
  let bytes = 0;
  for (const { query, bindings } of statements) {
    expect(query).toMatch(/^\s*SELECT/i);
    for (const row of state.storage.sql.exec(query, ...bindings).raw()) {
      for (const value of row) if (typeof value === "string") bytes += bytesOf(value);
    }
  }
  return bytes;
}

/** Starts logging the statements the object's own SQL runs; the returned function stops it. */
function logStatements(state: DurableObjectState) {
  const sql = state.storage.sql;
  const exec = sql.exec;
  const log: { query: string; bindings: unknown[] }[] = [];
  sql.exec = ((query: string, ...bindings: unknown[]) => {
    log.push({ query, bindings });
    return exec.call(sql, query, ...bindings);
  }) as typeof sql.exec;
  return () => {
    sql.exec = exec;
    return log;
  };
}

describe("bounded views", () => {
  it("answers a run of 24 steps of 1 MB each in a view of a few KB: each value truncated with its size and the route to the whole", async () => {
    const stub = freshStub();
    const runId = await inFixture(
      async ({ tasks }) => (await tasks.run("big@v1", { steps: 24, chars: 1_000_000 })).runId,
      stub,
    );
    await settled(stub, runId);
    const response = await get(stub, `/inspect/api/runs/${runId}`);
    const text = await response.text();
    // 24 MB of step results and 1 MB of result, answered in under 32 KB.
    expect(bytesOf(text)).toBeLessThan(32 * 1024);
    const view = JSON.parse(text) as InspectRunView;
    expect(view.steps).toHaveLength(24);
    // A task value's size is the bytes it is stored in: its JSON in the codec's 9-byte envelope.
    expect(truncated(view.steps[0]?.result)).toEqual({
      bytes: 1_000_011,
      preview: `"${"x".repeat(199)}`,
      path: `/runs/${runId}/steps/0/result`,
    });
    expect(truncated(view.result)).toMatchObject({
      bytes: 1_000_011,
      path: `/runs/${runId}/result`,
    });
    // Small values are shown as they are.
    expect(view.input).toEqual({ steps: 24, chars: 1_000_000 });

    // The whole value answers at the path its record names.
    const whole = await get(stub, `/inspect/api${truncated(view.steps[23]?.result).path}`);
    expect(whole.status).toBe(200);
    const body = (await whole.json()) as { bytes: number; value: string; path: string };
    expect(body).toMatchObject({
      version: 1,
      bytes: 1_000_002,
      path: `/runs/${runId}/steps/23/result`,
    });
    expect(body.value).toBe("x".repeat(1_000_000));
    expect((await get(stub, `/inspect/api/runs/${runId}/steps/24/result`)).status).toBe(404);
    expect((await get(stub, `/inspect/api/runs/${runId}/steps/x/result`)).status).toBe(400);
  });

  it("builds the view of a run of 24 steps of 1 MB each reading a few KB of values out of SQLite, not 25 MB", async () => {
    const stub = freshStub();
    const runId = await inFixture(
      async ({ tasks }) => (await tasks.run("big@v1", { steps: 24, chars: 1_000_000 })).runId,
      stub,
    );
    await settled(stub, runId);
    await inFixture((_fixture, state) => {
      // A new instance's Tasks and Inspector over the same storage, every statement logged.
      const counted = countingState(anotherInstance(state));
      const tasks = new Tasks(counted.state, { definitions: { "big@v1": async () => {} } });
      const inspector = new Inspector(counted.state, { parts: [tasks] });
      const mark = counted.mark();
      const view = inspector.run(runId);
      const read = counted.log.slice(mark);
      const bytes = returnedBytes(state, read);
      // 25 MB held; the view's read takes each large value's size and first characters only.
      expect(bytes).toBeLessThan(24 * 1024);
      // SQL measures what it does not return.
      expect(read.some(({ query }) => /octet_length\(value\)/.test(query))).toBe(true);
      // The view answers as before: every step, each value truncated with its size and route.
      expect(view?.steps).toHaveLength(24);
      expect(truncated(view?.steps[23]?.result)).toEqual({
        bytes: 1_000_011,
        preview: `"${"x".repeat(199)}`,
        path: `/runs/${runId}/steps/23/result`,
      });
      expect(truncated(view?.result)).toMatchObject({ bytes: 1_000_011 });
      expect(view?.input).toEqual({ steps: 24, chars: 1_000_000 });
      // The whole value still answers on demand.
      expect(inspector.value(`/runs/${runId}/steps/23/result`)?.value).toBe("x".repeat(1_000_000));
    }, stub);
  });

  it("builds the view of a run of 300 steps of 10 KB each reading at most maxViewBytes of values, not 3 MB", async () => {
    const stub = freshStub();
    const runId = await inFixture(
      async ({ tasks }) => (await tasks.run("big@v1", { steps: 300, chars: 10_000 })).runId,
      stub,
    );
    await settled(stub, runId);
    await inFixture((_fixture, state) => {
      const counted = countingState(anotherInstance(state));
      const tasks = new Tasks(counted.state, { definitions: { "big@v1": async () => {} } });
      const inspector = new Inspector(counted.state, { parts: [tasks] });
      const mark = counted.mark();
      const view = inspector.run(runId);
      const bytes = returnedBytes(state, counted.log.slice(mark));
      // Each result is under maxValueBytes (16 KiB); 3 MB are held. The read stops taking them
      // whole at maxViewBytes (256 KiB) and takes only the size and first characters of the rest.
      expect(bytes).toBeLessThan(256 * 1024 + 128 * 1024);
      expect(view?.steps).toHaveLength(300);
      expect(view?.steps[0]?.result).toBe("x".repeat(10_000));
      expect(truncated(view?.steps[299]?.result)).toMatchObject({
        path: `/runs/${runId}/steps/299/result`,
      });
      expect(inspector.value(`/runs/${runId}/steps/299/result`)?.value).toBe("x".repeat(10_000));
    }, stub);
  });

  it("feeds a running run of 24 steps of 1 MB each reading a few KB of values per read", async () => {
    const stub = freshStub();
    const runId = await inFixture(async ({ tasks }) => {
      const { runId } = await tasks.run("big-forever@v1", { steps: 24, chars: 1_000_000 });
      return runId;
    }, stub);
    // Until the run hangs in its last step, all 24 large results journaled.
    for (let i = 0; i < 200; i++) {
      const steps = await inFixture(({ tasks }) => tasks.steps(runId)?.length ?? 0, stub);
      if (steps === 25) break;
      await scheduler.wait(20);
    }
    let stop: () => { query: string; bindings: unknown[] }[] = () => [];
    await runInDurableObject(stub, (_fixture, state) => {
      stop = logStatements(state);
    });
    const seen = await events(
      await get(stub, `/inspect/api/live?view=${encodeURIComponent(`/runs/${runId}`)}`),
      (s) => s.some((e) => e.event === "view"),
    );
    await runInDurableObject(stub, (_fixture, state) => {
      // The reads (the run's own attempt may write meanwhile: its claim's refreshes).
      const log = stop().filter(({ query }) => /^\s*SELECT/i.test(query));
      const reads = log.filter(({ query }) => /FROM dk_tasks_steps/.test(query)).length;
      expect(reads).toBeGreaterThanOrEqual(1);
      // Each read of the feed takes under 24 KB of values out of SQLite (24 MB held).
      expect(returnedBytes(state, log)).toBeLessThan(reads * 24 * 1024);
    });
    const view = seen.find((e) => e.event === "view")?.data as { body: InspectRunView } | undefined;
    expect(view?.body.run.state).toBe("running");
    expect(view?.body.steps).toHaveLength(25);
    expect(truncated(view?.body.steps[0]?.result)).toMatchObject({ bytes: 1_000_011 });
  });

  it("answers a stream of 1 MiB chunks in a page of truncated chunks, and pages a stream of 10 KB chunks by bytes", async () => {
    await inFixture(({ streams, inspector }) => {
      const big = streams.open("big", { encoding: "text" });
      for (let i = 0; i < 30; i++) big.append("z".repeat(1_000_000));
      big.close();
      const page = inspector.stream("big") as InspectStreamView;
      // 30 MB held, a page of under 16 KB answered: every chunk is its size and its route.
      expect(bytesOf(JSON.stringify(page))).toBeLessThan(16 * 1024);
      expect(page.chunks).toHaveLength(30);
      expect(truncated(page.chunks[7]?.value)).toMatchObject({
        bytes: 1_000_002,
        path: "/streams/big/chunks/7",
      });
      expect(inspector.value("/streams/big/chunks/7")?.value).toBe("z".repeat(1_000_000));

      const mid = streams.open("mid");
      for (let i = 0; i < 100; i++) mid.append({ i, pad: "p".repeat(10_000) });
      const seen: number[] = [];
      let from = 0;
      for (let pages = 0; pages < 20; pages++) {
        const view = inspector.stream("mid", { from }) as InspectStreamView;
        // A page ends when its chunks fill maxViewBytes (256 KiB), not at 100 chunks of 1 MB.
        expect(bytesOf(JSON.stringify(view))).toBeLessThan(256 * 1024 + 4 * 1024);
        seen.push(...view.chunks.map((chunk) => chunk.seq));
        for (const chunk of view.chunks) expect(chunk.value).toMatchObject({ i: chunk.seq });
        from = view.next;
        if (view.upToDate) break;
      }
      expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => i));
      expect(seen.length).toBeGreaterThan(25);
    });
  });

  it("bounds a chat turn's chunks the same way, and pages them from `from`", async () => {
    await inFixture(async ({ chat, inspector }) => {
      const turn = chat.startTurn("c-big", { messageId: "m" });
      turn.write({ type: "text-start", id: "t" });
      for (let i = 0; i < 3; i++)
        turn.write({ type: "text-delta", id: "t", delta: "d".repeat(20_000) });
      turn.finish();
      const view = inspector.chatTurn(turn.turnId);

      expect(bytesOf(JSON.stringify(view))).toBeLessThan(8 * 1024);
      expect(view?.chunks[1]).toEqual({ type: "text-start", id: "t" });
      const record = truncated(view?.chunks[2]);
      expect(record.path).toBe(`/turns/${encodeURIComponent(turn.turnId)}/chunks/2`);
      expect(inspector.value(record.path)?.value).toEqual({
        type: "text-delta",
        id: "t",
        delta: "d".repeat(20_000),
      });
      expect(view).toMatchObject({ storedCount: 5, from: 0, next: null });
      expect(inspector.chatTurn(turn.turnId, { from: 3, limit: 1 })).toMatchObject({
        from: 3,
        next: 4,
      });
    });
  });
});
