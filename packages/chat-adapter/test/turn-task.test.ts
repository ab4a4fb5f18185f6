import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ChatUIMessageChunk, RECOVERY_FAILED_TEXT } from "../src/index";
import { script, type TurnHost, type TurnInput } from "./fixtures/turn-host";
import { frames } from "./helpers";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
type Stub = DurableObjectStub<TurnHost>;
const inHost = <T>(stub: Stub, fn: (host: TurnHost) => T | Promise<T>) =>
  runInDurableObject(stub, fn) as Promise<T>;

let counter = 0;
function freshName(): string {
  counter += 1;
  return `turn-host-${counter}-${crypto.randomUUID()}`;
}
const hostNamed = (name: string): Stub => env.TURN_HOST.getByName(name);

/**
 * Starts a turn as the demo's POST does (startTurn, then the run), lets the live model write up to
 * `hangBefore`, stores what it wrote, and restarts the object with no client attached. Returns the
 * run (= turn) id and a stub of the restarted object.
 */
async function startAndRestart(
  input: Omit<TurnInput, "chatId" | "turnId">,
): Promise<{ turnId: string; stub: Stub }> {
  const name = freshName();
  const turnId = await inHost(hostNamed(name), async (host) => {
    const turn = host.chat.startTurn("chat", { messageId: "m" });
    await host.tasks.run(
      "chat.turn@v1",
      { chatId: "chat", turnId: turn.turnId, ...input },
      { runId: turn.turnId },
    );
    while (host.note("hung") === 0) await sleep(5);
    host.chat.liveTurn(turn.turnId)?.flush();
    return turn.turnId;
  });
  await abortAllDurableObjects();
  return { turnId, stub: hostNamed(name) };
}

/** Runs the object's alarm (armed at the claim deadline, 200 ms) until the run settled. */
async function settled(stub: Stub, runId: string) {
  for (let i = 0; i < 100; i++) {
    await sleep(50);
    await runDurableObjectAlarm(stub);
    const run = await inHost(stub, (host) => host.tasks.get(runId));
    if (run !== null && ["completed", "failed", "cancelled"].includes(run.state)) return run;
  }
  throw new Error("the run did not settle");
}

async function storedOf(stub: Stub, turnId: string): Promise<ChatUIMessageChunk[] | null> {
  return inHost(stub, (host) => host.chat.storedChunks(turnId));
}

describe("a chat turn as a durable task, restarted with no client attached", () => {
  const DELTAS = 30; // 33 script chunks: text-start, 30 deltas, text-end, finish
  const whole = (): ChatUIMessageChunk[] => [{ type: "start", messageId: "m" }, ...script(DELTAS)];

  for (const [label, hangBefore] of [
    ["before any chunk", 0],
    ["after 1 chunk", 1],
    ["at a segment boundary (16 stored with the start)", 15],
    ["after the last chunk", 33],
  ] as const) {
    it(`is continued by the alarm ${label}: one start, every chunk once, finish; one model call per attempt`, async () => {
      const { turnId, stub } = await startAndRestart({
        deltas: DELTAS,
        hangBefore,
        recover: "continue",
      });
      const run = await settled(stub, turnId);
      expect(run).toMatchObject({
        state: "completed",
        result: { outcome: "finished", recoveries: 1 },
      });
      expect(await storedOf(stub, turnId)).toEqual(whole());
      expect(await inHost(stub, (host) => host.streams.status(`dk-chat/${turnId}`)?.state)).toBe(
        "completed",
      );
      expect(await inHost(stub, (host) => [host.note("calls"), host.note("recoveries")])).toEqual([
        2, 1,
      ]);
    });
  }

  it("ends the turn with an error chunk after the restart by default (recover answers fail)", async () => {
    const { turnId, stub } = await startAndRestart({
      deltas: DELTAS,
      hangBefore: 5,
      recover: "fail",
    });
    expect(await settled(stub, turnId)).toMatchObject({ result: { outcome: "failed" } });
    expect(await storedOf(stub, turnId)).toEqual([
      ...whole().slice(0, 6),
      { type: "error", errorText: RECOVERY_FAILED_TEXT },
    ]);
    expect(await inHost(stub, (host) => host.note("recoveries"))).toBe(0);
  });

  it("retries the answer from its start as a new segment, the open text part ended first", async () => {
    const { turnId, stub } = await startAndRestart({ deltas: 3, hangBefore: 2, recover: "retry" });
    expect(await settled(stub, turnId)).toMatchObject({ result: { outcome: "finished" } });
    expect(await storedOf(stub, turnId)).toEqual([
      { type: "start", messageId: "m" },
      ...script(3).slice(0, 2),
      { type: "text-end", id: "t" },
      ...script(3),
    ]);
  });

  it("ends a turn whose recovery throws every time with an error chunk after its budget", async () => {
    const { turnId, stub } = await startAndRestart({
      deltas: DELTAS,
      hangBefore: 4,
      recover: "continue",
      failRecoveries: true,
    });
    expect(await settled(stub, turnId)).toMatchObject({
      state: "completed",
      result: { outcome: "failed", recoveries: 3 },
    });
    const stored = await storedOf(stub, turnId);
    expect(stored?.slice(0, 5)).toEqual(whole().slice(0, 5));
    expect(stored?.at(-1)).toEqual({ type: "error", errorText: RECOVERY_FAILED_TEXT });
    expect(stored?.filter((chunk) => chunk.type === "error")).toHaveLength(1);
    // The live call, then two recoveries (maxRecoveries 2); the next attempt ended the turn.
    expect(await inHost(stub, (host) => host.note("recoveries"))).toBe(2);
  });

  it("lets a client resume the interrupted turn before the recovery and read it to its finish", async () => {
    const { turnId, stub } = await startAndRestart({
      deltas: DELTAS,
      hangBefore: 10,
      recover: "continue",
    });
    const body = await inHost(stub, async (host) => frames(host.chat.resumeResponse("chat")));
    expect(body).toEqual([...whole(), "[DONE]"]);
    expect(await settled(stub, turnId)).toMatchObject({ result: { outcome: "finished" } });
  });

  it("ends the turn with an error chunk when a recovery fails its step for good", async () => {
    const { turnId, stub } = await startAndRestart({
      deltas: DELTAS,
      hangBefore: 3,
      recover: "continue",
      nonRetryable: true,
    });
    expect(await settled(stub, turnId)).toMatchObject({
      state: "failed",
      error: { code: "tasks/non-retryable" },
    });
    const stored = await storedOf(stub, turnId);
    expect(stored?.at(-1)).toEqual({ type: "error", errorText: RECOVERY_FAILED_TEXT });
  });
});

describe("a chat turn as a durable task, live", () => {
  it("writes at most 270 row changes for 20 durable turns of 100 chunks, chat and tasks together", async () => {
    const stub = hostNamed(freshName());
    const rows = await runInDurableObject(stub, async (host: TurnHost, state) => {
      host.chat.startTurn("warm").finish(); // the tables exist before counting
      const total = () =>
        state.storage.sql.exec<{ n: number }>("SELECT total_changes() AS n").one().n;
      const before = total();
      for (let t = 0; t < 20; t++) {
        const turn = host.chat.startTurn("rows");
        const input = { chatId: "rows", turnId: turn.turnId, deltas: 97, hangBefore: null };
        await host.tasks.run("chat.turn@v1", { ...input, recover: "fail" }, { runId: turn.turnId });
        for (let i = 0; i < 200 && host.tasks.get(turn.turnId)?.state !== "completed"; i++) {
          await sleep(5);
        }
        expect(host.tasks.get(turn.turnId)?.state).toBe("completed");
      }
      return total() - before;
    });
    console.log(`durable chat turns: 20 turns x 100 chunks: ${rows} row changes (total_changes)`);
    // 263 measured: the turns' own rows, the tasks' (journal, run row), and 3 rows of each run's
    // event stream (accepted, its attempt, its settlement).
    expect(rows).toBeLessThanOrEqual(270);
  });

  it("streams the model's answer to the POST response and finishes with no recovery", async () => {
    const stub = hostNamed(freshName());
    const { post, turnId } = await inHost(stub, async (host) => {
      const turn = host.chat.startTurn("live", { messageId: "m" });
      const response = host.chat.turnResponse(turn);
      await host.tasks.run(
        "chat.turn@v1",
        { chatId: "live", turnId: turn.turnId, deltas: 4, hangBefore: null, recover: "fail" },
        { runId: turn.turnId },
      );
      return { post: await frames(response), turnId: turn.turnId };
    });
    expect(post).toEqual([{ type: "start", messageId: "m" }, ...script(4), "[DONE]"]);
    expect(await settled(stub, turnId)).toMatchObject({
      result: { outcome: "finished", recoveries: 0 },
    });
    expect(await inHost(stub, (host) => host.note("calls"))).toBe(1);
  });

  it("stops the model and settles the run as stopped when a client stops the turn", async () => {
    const stub = hostNamed(freshName());
    const turnId = await inHost(stub, async (host) => {
      const turn = host.chat.startTurn("stop", { messageId: "m" });
      await host.tasks.run(
        "chat.turn@v1",
        {
          chatId: "stop",
          turnId: turn.turnId,
          deltas: 50,
          hangBefore: null,
          recover: "fail",
          delayMs: 5,
        },
        { runId: turn.turnId },
      );
      await sleep(30);
      host.chat.stopTurn("stop");
      return turn.turnId;
    });
    expect(await settled(stub, turnId)).toMatchObject({ result: { outcome: "stopped" } });
    expect(await inHost(stub, (host) => host.note("aborted"))).toBe(1);
    expect((await storedOf(stub, turnId))?.at(-1)).toEqual({ type: "abort" });
  });
});
