import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { anotherInstance } from "@durablekit/test-kit";
import { safeValidateUIMessages, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import {
  ChatHistory,
  type ChatHistoryEntry,
  ChatTurns,
  isChatError,
  RECOVERY_FAILED_TEXT,
  TURN_NOT_KEPT_TEXT,
} from "../src/index";
import { type HistoryHost, reasoningScript } from "./fixtures/history-host";
import { frames, totalChanges } from "./helpers";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
type Stub = DurableObjectStub<HistoryHost>;
const inHost = <T>(
  stub: Stub,
  fn: (host: HistoryHost, state: DurableObjectState) => T | Promise<T>,
) => runInDurableObject(stub, fn) as Promise<T>;
const freshHost = (): { stub: Stub; name: string } => {
  const name = `history-${crypto.randomUUID()}`;
  return { stub: env.HISTORY_HOST.getByName(name), name };
};

const user = (id: string, text = `question ${id}`): UIMessage => ({
  id,
  role: "user",
  parts: [{ type: "text", text }],
});
const submit = (...messages: UIMessage[]) => ({ messages, trigger: "submit-message" });

/** The whole text of a message's text parts. */
const textOf = (message: UIMessage): string =>
  message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
/** The text a finished scripted answer of `deltas` deltas shows. */
const answerText = (deltas: number) => Array.from({ length: deltas }, (_, i) => `w${i} `).join("");

/** Runs the object's alarm until the run settled (the claim deadline recovers a restarted run). */
async function settled(stub: Stub, runId: string) {
  for (let i = 0; i < 200; i++) {
    const run = await inHost(stub, (host) => host.tasks.get(runId));
    if (run !== null && ["completed", "failed", "cancelled"].includes(run.state)) return run;
    await sleep(20);
    await runDurableObjectAlarm(stub);
  }
  throw new Error("the run did not settle");
}

const entriesOf = (stub: Stub, chatId = "c") =>
  inHost(stub, (host) => host.history.entries(chatId)) as Promise<ChatHistoryEntry[]>;
const summary = (entries: ChatHistoryEntry[]) =>
  entries.map((entry) => `${entry.message.role}:${entry.message.id}`);

describe("the chat history owned by the server", () => {
  it("stores the request's messages, then the turn's settled answer with reasoning, finished", async () => {
    const { stub } = freshHost();
    const turnId = await inHost(stub, (host) => host.answer("c", submit(user("u1"))));
    await settled(stub, turnId);
    const entries = await entriesOf(stub);
    expect(entries.map((entry) => entry.message.role)).toEqual(["user", "assistant"]);
    expect(entries[0]).toEqual({ message: user("u1"), turnId: null, end: null });
    const answer = entries[1] as ChatHistoryEntry;
    expect(answer.turnId).toBe(turnId);
    expect(answer.end).toEqual({ state: "finished" });
    expect(answer.message.parts).toEqual([
      { type: "reasoning", id: "r", text: "Think it through.", state: "done" },
      { type: "text", text: answerText(10), state: "done" },
    ]);
    // What the history serves is what the AI SDK loads.
    expect(
      (await safeValidateUIMessages({ messages: entries.map((e) => e.message) })).success,
    ).toBe(true);
  });

  it("keeps the server's settled answer when a client sends back its stale partial copy", async () => {
    const { stub } = freshHost();
    const first = await inHost(stub, (host) =>
      host.answer("c", submit(user("u1")), { deltas: 40 }),
    );
    await settled(stub, first);
    const [, settledAnswer] = await entriesOf(stub);
    const answerId = (settledAnswer as ChatHistoryEntry).message.id;
    // A client that went away after two words sends them back with its next question.
    const stale: UIMessage = {
      id: answerId,
      role: "assistant",
      parts: [{ type: "text", text: "w0 w1 ", state: "streaming" }],
    };
    const second = await inHost(stub, (host) =>
      host.answer("c", submit(user("u1"), stale, user("u2"))),
    );
    await settled(stub, second);
    const entries = await entriesOf(stub);
    expect(summary(entries).slice(0, 3)).toEqual(["user:u1", `assistant:${answerId}`, "user:u2"]);
    expect(textOf((entries[1] as ChatHistoryEntry).message)).toBe(answerText(40));
    expect(entries[1]).toEqual(settledAnswer);
  });

  it("ignores a client's copy of an answer that is still streaming: the server's copy lands when it ends", async () => {
    const { stub } = freshHost();
    const first = await inHost(stub, async (host) => {
      const turnId = await host.answer("c", submit(user("u1")), { deltas: 30, delayMs: 5 });
      while ((host.chat.storedChunks(turnId)?.length ?? 0) < 9) {
        host.chat.liveTurn(turnId)?.flush();
        await sleep(5);
      }
      return turnId;
    });
    const answerId = await inHost(stub, (host) => host.chat.getTurn(first)?.messageId as string);
    const stale: UIMessage = {
      id: answerId,
      role: "assistant",
      parts: [{ type: "text", text: "a client's own words", state: "streaming" }],
    };
    // The client stopped it itself (a stop request), then asks again carrying its copy.
    await inHost(stub, (host) => host.chat.stopTurn("c", "enough"));
    const second = await inHost(stub, (host) =>
      host.answer("c", submit(user("u1"), stale, user("u2"))),
    );
    await settled(stub, first);
    await settled(stub, second);
    const entries = await entriesOf(stub);
    expect(summary(entries).slice(0, 3)).toEqual(["user:u1", `assistant:${answerId}`, "user:u2"]);
    const kept = entries[1] as ChatHistoryEntry;
    expect(textOf(kept.message)).not.toContain("a client's own words");
    expect(textOf(kept.message)).toMatch(/^w0 /);
    expect(kept.end).toEqual({ state: "stopped", reason: "enough" });
  });

  it("keeps a turn's answer right after the user message that started it when a second message arrives while it streams", async () => {
    const { stub } = freshHost();
    const [first, second] = await inHost(stub, async (host) => {
      const one = await host.answer("c", submit(user("u1")), { deltas: 30, delayMs: 5 });
      await sleep(30);
      const two = await host.answer("c", submit(user("u1"), user("u2")), { deltas: 5 });
      return [one, two];
    });
    await settled(stub, first);
    await settled(stub, second);
    const entries = await entriesOf(stub);
    const ids = await inHost(stub, (host) => [
      host.chat.getTurn(first)?.messageId,
      host.chat.getTurn(second)?.messageId,
    ]);
    expect(summary(entries)).toEqual([
      "user:u1",
      `assistant:${ids[0]}`,
      "user:u2",
      `assistant:${ids[1]}`,
    ]);
    // The first turn was superseded by the second: it failed, and says so.
    expect(entries[1]?.end).toEqual({
      state: "failed",
      errorText: "The turn was superseded by a new turn.",
    });
    expect(entries[3]?.end).toEqual({ state: "finished" });
  });

  it("replaces the answer a regenerate-message names, in its place", async () => {
    const { stub } = freshHost();
    const first = await inHost(stub, (host) => host.answer("c", submit(user("u1"))));
    await settled(stub, first);
    const second = await inHost(stub, (host) =>
      host.answer("c", { messages: [user("u1")], trigger: "regenerate-message" }, { deltas: 3 }),
    );
    await settled(stub, second);
    const entries = await entriesOf(stub);
    const regenerated = await inHost(stub, (host) => host.chat.getTurn(second)?.messageId);
    expect(summary(entries)).toEqual(["user:u1", `assistant:${regenerated}`]);
    expect(textOf((entries[1] as ChatHistoryEntry).message)).toBe(answerText(3));
  });

  it("serves the conversation the turn answers with the server's copies", async () => {
    const { stub } = freshHost();
    const first = await inHost(stub, (host) => host.answer("c", submit(user("u1"))));
    await settled(stub, first);
    const answerId = (await entriesOf(stub))[1]?.message.id as string;
    const conversation = await inHost(stub, async (host) => {
      const stale: UIMessage = {
        id: answerId,
        role: "assistant",
        parts: [{ type: "text", text: "x" }],
      };
      const { turn, messages } = await host.history.startTurn(
        "c",
        submit(user("u1"), stale, user("u2")),
      );
      turn.finish();
      return messages;
    });
    expect(conversation.map((message) => message.id)).toEqual(["u1", answerId, "u2"]);
    expect(textOf(conversation[1] as UIMessage)).toBe(answerText(10));
  });
});

describe("the history's door", () => {
  /** Requests `ai`'s `safeValidateUIMessages` refuses, and other malformed requests. */
  const badMessages: [string, unknown][] = [
    [
      "a text part whose text is a number",
      [{ id: "u", role: "user", parts: [{ type: "text", text: 123 }] }],
    ],
    [
      "a text part whose text is an object",
      [{ id: "u", role: "user", parts: [{ type: "text", text: { a: 1 } }] }],
    ],
    ["parts [null, 7]", [{ id: "u", role: "user", parts: [null, 7] }]],
    ["an unknown role", [{ id: "u", role: "robot", parts: [] }]],
    ["a message without parts", [{ id: "u", role: "user" }]],
    ["no messages", []],
  ];
  const badRequests: [string, unknown][] = [
    ...badMessages.map(
      ([label, messages]) => [label, { messages, trigger: "submit-message" }] as [string, unknown],
    ),
    ["an unknown trigger", { messages: [user("u1")], trigger: "explode" }],
    ["a trigger that is not a string", { messages: [user("u1")], trigger: 7 }],
    ["no trigger", { messages: [user("u1")] }],
    [
      "a last message that is not the user's",
      submit(user("u1"), { id: "a", role: "assistant", parts: [] }),
    ],
    ["an id used twice", submit(user("u1"), user("u1"))],
    ["a body that is not an object", "hello"],
  ];

  for (const [label, messages] of badMessages.slice(0, -1)) {
    it(`agrees with ai's safeValidateUIMessages on ${label}: both refuse`, async () => {
      expect((await safeValidateUIMessages({ messages })).success).toBe(false);
    });
  }

  for (const [label, request] of badRequests) {
    it(`refuses ${label} with chat/invalid-argument, storing nothing and starting no turn`, async () => {
      const { stub } = freshHost();
      const outcome = await inHost(stub, async (host, state) => {
        const before = totalChanges(state);
        const error = await host.history.startTurn("c", request).catch((caught: unknown) => caught);
        return {
          coded: isChatError(error, "chat/invalid-argument"),
          message: (error as Error).message,
          changes: totalChanges(state) - before,
          active: host.chat.activeTurn("c"),
          turns: host.chat.listTurns("c").items.length,
        };
      });
      expect(outcome.coded, outcome.message).toBe(true);
      expect(outcome).toMatchObject({ changes: 0, active: null, turns: 0 });
      expect(await entriesOf(stub)).toEqual([]);
    });
  }

  it("refuses a request over maxRequestMessages, and a messageId or turnId already used with chat/conflict, storing nothing", async () => {
    const { stub } = freshHost();
    const outcome = await inHost(stub, async (host, state) => {
      const small = new ChatHistory(state, { chat: host.chat, maxRequestMessages: 2 });
      const tooMany = await small
        .startTurn("c", submit(user("u1"), user("u2"), user("u3")))
        .catch((error: unknown) => error);
      const { turn } = await host.history.startTurn("c", submit(user("u1")));
      turn.finish();
      const taken = await host.history
        .startTurn("c", submit(user("u1"), user("u2")), { messageId: "u1" })
        .catch((error: unknown) => error);
      // A turn id already used: the turn's start throws inside the transaction, which stores nothing.
      const turnTaken = await host.history
        .startTurn("c", submit(user("u1"), user("u2")), { turnId: turn.turnId })
        .catch((error: unknown) => error);
      return {
        tooMany: isChatError(tooMany, "chat/invalid-argument"),
        taken: isChatError(taken, "chat/conflict"),
        turnTaken: isChatError(turnTaken, "chat/conflict"),
        turns: host.chat.listTurns("c").items.length,
        ids: (await host.history.messages("c")).map((message) => message.id),
      };
    });
    expect(outcome).toMatchObject({ tooMany: true, taken: true, turnTaken: true, turns: 1 });
    expect(outcome.ids).toEqual(["u1", expect.any(String)]);
  });

  it("refuses tables written by a newer version with chat/schema-too-new", async () => {
    const { stub } = freshHost();
    const coded = await inHost(stub, (host, state) => {
      state.storage.sql.exec("UPDATE dk_chat_meta SET value = 99 WHERE name = 'schema_version'");
      try {
        new ChatHistory(state, { chat: host.chat });
        return false;
      } catch (error) {
        return isChatError(error, "chat/schema-too-new");
      }
    });
    expect(coded).toBe(true);
  });

  it("accepts what ai's validator accepts: reasoning, file and data parts, metadata", async () => {
    const messages: UIMessage[] = [
      {
        id: "u1",
        role: "user",
        metadata: { sentAt: 1 },
        parts: [
          { type: "text", text: "look" },
          { type: "file", mediaType: "image/png", url: "data:image/png;base64,AA==" },
          { type: "data-note", data: { any: "thing" } },
        ],
      },
    ];
    expect((await safeValidateUIMessages({ messages })).success).toBe(true);
    const { stub } = freshHost();
    const turnId = await inHost(stub, (host) => host.answer("c", submit(...messages)));
    await settled(stub, turnId);
    expect((await entriesOf(stub))[0]?.message).toEqual(messages[0]);
  });
});

describe("how a turn ended, seen by every later reader", () => {
  it("shows a stopped turn once, marked stopped with its reason, to a resume's end and to the history", async () => {
    const { stub } = freshHost();
    const turnId = await inHost(stub, async (host) => {
      const id = await host.answer("c", submit(user("u1")), { deltas: 50, delayMs: 5 });
      await sleep(40);
      host.chat.stopTurn("c", "stopped by the user");
      return id;
    });
    await settled(stub, turnId);
    const entries = await entriesOf(stub);
    expect(entries.filter((entry) => entry.turnId === turnId)).toHaveLength(1);
    expect(entries[1]?.end).toEqual({ state: "stopped", reason: "stopped by the user" });
    // The turn's stream ends with the same abort (a resume of it, while it is held).
    const replayed = await inHost(stub, async (host) => {
      const chunks = [];
      for await (const chunk of host.chat.read(turnId)) chunks.push(chunk);
      return chunks;
    });
    expect(replayed.at(-1)).toEqual({ type: "abort", reason: "stopped by the user" });
    expect(await inHost(stub, (host) => host.chat.resumeResponse("c").status)).toBe(204);
  });

  it("shows a turn whose recovery failed as failed with its error, to a reload after a restart", async () => {
    const { stub, name } = freshHost();
    const turnId = await inHost(stub, async (host) => {
      const id = await host.answer("c", submit(user("u1")), {
        deltas: 20,
        hangBefore: 12,
        failRecoveries: true,
      });
      while ((host.chat.storedChunks(id)?.length ?? 0) < 12) {
        host.chat.liveTurn(id)?.flush();
        await sleep(5);
      }
      return id;
    });
    await abortAllDurableObjects();
    const restarted = env.HISTORY_HOST.getByName(name);
    const run = await settled(restarted, turnId);
    // The recovery's model call threw until the recoveries were spent; the turn then failed.
    expect(run).toMatchObject({ state: "completed", result: { outcome: "failed" } });
    // A reload: the history shows the partial answer (its reasoning and first words) and the error.
    const entries = await entriesOf(restarted);
    expect(entries[1]?.end).toEqual({ state: "failed", errorText: RECOVERY_FAILED_TEXT });
    expect(entries[1]?.message.parts[0]).toMatchObject({
      type: "reasoning",
      text: "Think it through.",
    });
    expect(textOf(entries[1]?.message as UIMessage)).toMatch(/^w0 w1 /);
    // The stream shows the same end to a reader of the turn.
    const stored = await inHost(restarted, (host) => host.chat.storedChunks(turnId));
    expect(stored?.at(-1)).toEqual({ type: "error", errorText: RECOVERY_FAILED_TEXT });
  });

  /** Starts a turn, kills the object mid-answer, then kills each of `hung` recoveries mid-answer. */
  async function killedTurn(hung: number) {
    const { stub, name } = freshHost();
    const turnId = await inHost(stub, async (host) => {
      const id = await host.answer("c", submit(user("u1")), {
        deltas: 20,
        hangBefore: 8,
        hangRecoveries: hung,
      });
      while ((host.chat.storedChunks(id)?.length ?? 0) < 8) {
        host.chat.liveTurn(id)?.flush();
        await sleep(5);
      }
      return id;
    });
    for (let kill = 1; kill <= hung; kill++) {
      await abortAllDurableObjects();
      // The first wake of the new instance recovers the turn (its alarm fires at once); the
      // recovery writes a chunk and hangs, and the object is killed again.
      const restarted = env.HISTORY_HOST.getByName(name);
      for (let i = 0; i < 200; i++) {
        await sleep(20);
        const hungSoFar = await inHost(restarted, async (host) => {
          host.chat.liveTurn(turnId)?.flush();
          return host.hungRecoveries();
        });
        if (hungSoFar === kill) break;
      }
    }
    await abortAllDurableObjects();
    const restarted = env.HISTORY_HOST.getByName(name);
    return { turnId, restarted, run: await settled(restarted, turnId) };
  }

  it("finishes a turn whose recovery was killed too (maxRecoveries 2 by default), with the message of an uninterrupted one", async () => {
    const { turnId, restarted, run } = await killedTurn(1);
    expect(run).toMatchObject({
      state: "completed",
      result: { outcome: "finished", recoveries: 2 },
    });
    const entries = await entriesOf(restarted);
    expect(entries[1]?.end).toEqual({ state: "finished" });
    expect(entries[1]?.message.parts).toEqual([
      { type: "reasoning", id: "r", text: "Think it through.", state: "done" },
      { type: "text", text: answerText(20), state: "done" },
    ]);
    const stored = await inHost(restarted, (host) => host.chat.storedChunks(turnId));
    expect(stored?.filter((chunk) => chunk.type === "start")).toHaveLength(1);
    expect(stored?.at(-1)).toEqual({ type: "finish" });
  });

  it("shows a turn whose two recoveries were killed as failed with the recovery's error, to a reload", async () => {
    const { turnId, restarted, run } = await killedTurn(2);
    // With maxRecoveries (2) spent, the next attempt ends the turn (the tasks' breaker, 4, lets it
    // run); every later reader sees that end.
    expect(run).toMatchObject({ state: "completed", result: { outcome: "failed", recoveries: 3 } });
    const entries = await entriesOf(restarted);
    expect(entries[1]?.end).toEqual({ state: "failed", errorText: RECOVERY_FAILED_TEXT });
    expect(entries[1]?.message.parts[0]).toMatchObject({ type: "reasoning", state: "done" });
    const stored = await inHost(restarted, (host) => host.chat.storedChunks(turnId));
    expect(stored?.filter((chunk) => chunk.type === "start")).toHaveLength(1);
    expect(stored?.at(-1)).toEqual({ type: "error", errorText: RECOVERY_FAILED_TEXT });
  });

  it("continues a restarted turn with its reasoning, and the history holds the same message as an uninterrupted one", async () => {
    const { stub, name } = freshHost();
    const turnId = await inHost(stub, async (host) => {
      const id = await host.answer("c", submit(user("u1")), { deltas: 20, hangBefore: 3 });
      while ((host.chat.storedChunks(id)?.length ?? 0) < 3) {
        host.chat.liveTurn(id)?.flush();
        await sleep(5);
      }
      return id;
    });
    await abortAllDurableObjects();
    const restarted = env.HISTORY_HOST.getByName(name);
    expect((await settled(restarted, turnId)).state).toBe("completed");
    const entries = await entriesOf(restarted);
    expect(entries[1]?.end).toEqual({ state: "finished" });
    expect(entries[1]?.message.parts).toEqual([
      { type: "reasoning", id: "r", text: "Think it through.", state: "done" },
      { type: "text", text: answerText(20), state: "done" },
    ]);
  });

  it("replays a turn's reasoning chunks to a resume while it streams", async () => {
    const { stub } = freshHost();
    const body = await inHost(stub, async (host) => {
      const id = await host.answer("c", submit(user("u1")), { deltas: 20, delayMs: 5 });
      while ((host.chat.storedChunks(id)?.length ?? 0) < 2) {
        host.chat.liveTurn(id)?.flush();
        await sleep(5);
      }
      return frames(host.chat.resumeResponse("c"));
    });
    const chunks = body.filter((frame) => frame !== "[DONE]") as { type: string }[];
    expect(chunks.map((chunk) => chunk.type).slice(0, 6)).toEqual([
      "start",
      "reasoning-start",
      "reasoning-delta",
      "reasoning-delta",
      "reasoning-delta",
      "reasoning-end",
    ]);
    expect(chunks.slice(1)).toEqual(reasoningScript(20));
  });

  it("remembers on read a turn that ended without rememberTurn, and marks one whose stream is gone", async () => {
    const { stub } = freshHost();
    const entries = await inHost(stub, async (host) => {
      // Turns started through the history but written by hand, as a host without tasks would.
      const failed = await host.history.startTurn("c", submit(user("u1")));
      failed.turn.write({ type: "text-start", id: "t" });
      failed.turn.write({ type: "text-delta", id: "t", delta: "half" });
      failed.turn.fail("the model crashed");
      const lost = await host.history.startTurn("c", submit(user("u1"), user("u2")));
      lost.turn.finish();
      host.streams.delete(`dk-chat/${lost.turn.turnId}`);
      return host.history.entries("c");
    });
    expect(entries.map((entry) => entry.end)).toEqual([
      null,
      { state: "failed", errorText: "the model crashed" },
      null,
      { state: "failed", errorText: TURN_NOT_KEPT_TEXT },
    ]);
    expect(textOf(entries[1]?.message as UIMessage)).toBe("half");
  });
});

describe("what the history costs", () => {
  it("writes 3 row changes per turn beside the turn's own 4 (20 turns)", async () => {
    const { stub } = freshHost();
    const figures = await inHost(stub, async (host, state) => {
      const turnsOnly = new ChatTurns(anotherInstance(state), { streams: host.streams });
      let before = totalChanges(state);
      for (let t = 0; t < 20; t++) {
        const turn = turnsOnly.startTurn("bare");
        for (const chunk of reasoningScript(95)) turn.write(chunk);
        turn.finish();
      }
      const stream = totalChanges(state) - before;
      const conversation: UIMessage[] = [];
      before = totalChanges(state);
      const marks: number[] = [];
      for (let t = 0; t < 20; t++) {
        marks.push(totalChanges(state) - before);
        conversation.push(user(`u${t}`));
        const { turn } = await host.history.startTurn("c", submit(...conversation));
        for (const chunk of reasoningScript(95)) turn.write(chunk);
        turn.finish();
        const entry = await host.history.rememberTurn(turn.turnId);
        conversation.push(entry?.message as UIMessage);
      }
      marks.push(totalChanges(state) - before);
      return { stream, withHistory: marks.at(-1) as number, marks };
    });
    expect(figures.stream).toBe(80);
    // Each turn after the object's first: its 4 stream rows and 3 of the history (the user
    // message, the answer's place, the answer); the first turn pays 2 more, once.
    const perTurn = figures.marks
      .slice(2)
      .map((mark, t) => mark - (figures.marks[t + 1] as number));
    expect(new Set(perTurn)).toEqual(new Set([7]));
    // The history must not double the stream side's rows.
    expect(figures.withHistory - figures.stream).toBeLessThanOrEqual(62);
  });
});
