import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

/** What the history route answers. */
interface History {
  messages: UIMessage[];
  ends: Record<string, { state: string; reason?: string | null; errorText?: string }>;
}

const ask = (id: string, text: string): UIMessage => ({
  id,
  role: "user",
  parts: [{ type: "text", text }],
});

/** The last state of the assistant message a UI message chunk stream assembles. */
async function assemble(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream<UIMessage>({ stream })) last = message;
  return last;
}

/** The message a list of chunks assembles, as the AI SDK client shows it. */
function assembleChunks(chunks: UIMessageChunk[]): Promise<UIMessage | undefined> {
  return assemble(
    new ReadableStream({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    }),
  );
}

/** Reads `count` chunks of a stream, then leaves the rest unread. */
async function readSome(stream: ReadableStream<UIMessageChunk>, count: number) {
  const reader = stream.getReader();
  const chunks: UIMessageChunk[] = [];
  while (chunks.length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
  }
  return { chunks, reader };
}

async function readAll(reader: ReadableStreamDefaultReader<UIMessageChunk>) {
  const chunks: UIMessageChunk[] = [];
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    chunks.push(next.value);
  }
  return chunks;
}

const textOf = (message: UIMessage | undefined): string =>
  (message?.parts ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");

describe("the chat history under wrangler dev, driven by the AI SDK's own client", () => {
  let dev: WranglerDev;
  let transport: DefaultChatTransport<UIMessage>;
  let reference: UIMessage | undefined;

  const send = (chatId: string, messages: UIMessage[], abortSignal?: AbortSignal) =>
    transport.sendMessages({
      chatId,
      messages,
      trigger: "submit-message",
      messageId: undefined,
      abortSignal,
    });

  /** The chat's history once it holds `count` messages (a turn settles a moment after its end). */
  async function historyOf(chatId: string, count: number): Promise<History> {
    let history: History = { messages: [], ends: {} };
    for (let look = 0; look < 100 && history.messages.length < count; look++) {
      if (look > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      const response = await fetch(`${dev.url}/chat/${encodeURIComponent(chatId)}/messages`);
      if (response.ok) history = (await response.json()) as History;
    }
    return history;
  }

  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir, vars: { CHAT_TOKEN_DELAY_MS: "20" } });
    transport = new DefaultChatTransport({ api: `${dev.url}/chat` });
    reference = await assemble(await send("reference", [ask("u1", "hello")]));
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("streams the scripted model's reasoning before its answer, and the history keeps both", async () => {
    expect(reference?.parts.map((part) => part.type)).toEqual(["reasoning", "text"]);
    expect(reference?.parts[0]).toMatchObject({ type: "reasoning", state: "done" });
    const history = await historyOf("reference", 2);
    expect(history.messages[1]?.parts).toEqual(reference?.parts);
    expect(history.ends[reference?.id as string]).toEqual({ state: "finished" });
  });

  it("keeps the server's whole answer when a client that disconnected mid-turn sends its partial copy with its next message", async () => {
    const abort = new AbortController();
    const { chunks } = await readSome(await send("stale", [ask("u1", "hello")], abort.signal), 14);
    abort.abort();
    const partial = (await assembleChunks(chunks)) as UIMessage;
    expect(textOf(partial).length).toBeLessThan(textOf(reference).length);
    // The server finishes the turn without the client.
    const settled = await historyOf("stale", 2);
    expect(textOf(settled.messages[1])).toBe(textOf(reference));
    // The client's next message carries its stale copy of the answer.
    await assemble(await send("stale", [ask("u1", "hello"), partial, ask("u2", "and then?")]));
    const history = await historyOf("stale", 4);
    expect(history.messages.map((message) => message.id).slice(0, 3)).toEqual([
      "u1",
      partial.id,
      "u2",
    ]);
    expect(textOf(history.messages[1])).toBe(textOf(reference));
    expect(history.messages[1]).toEqual(settled.messages[1]);
  });

  it("keeps each answer right after the message that asked when a second message arrives while the first turn streams", async () => {
    const { chunks, reader } = await readSome(await send("second", [ask("u1", "hello")]), 5);
    const firstId = (chunks[0] as { messageId: string }).messageId;
    const second = await assemble(
      await send("second", [ask("u1", "hello"), ask("u2", "one more thing")]),
    );
    // The first turn was superseded: its stream ends with the error that says so.
    const rest = await readAll(reader);
    expect(rest.at(-1)).toMatchObject({ type: "error" });
    const history = await historyOf("second", 4);
    expect(history.messages.map((message) => `${message.role}:${message.id}`)).toEqual([
      "user:u1",
      `assistant:${firstId}`,
      "user:u2",
      `assistant:${second?.id}`,
    ]);
    expect(history.ends[firstId]).toEqual({
      state: "failed",
      errorText: "The turn was superseded by a new turn.",
    });
    expect(history.ends[second?.id as string]).toEqual({ state: "finished" });
  });

  const good = ask("u1", "hello");
  const badBodies: [string, unknown][] = [
    [
      "a text part whose text is a number",
      { messages: [{ ...good, parts: [{ type: "text", text: 123 }] }], trigger: "submit-message" },
    ],
    [
      "a text part whose text is an object",
      {
        messages: [{ ...good, parts: [{ type: "text", text: { a: 1 } }] }],
        trigger: "submit-message",
      },
    ],
    ["parts [null, 7]", { messages: [{ ...good, parts: [null, 7] }], trigger: "submit-message" }],
    ["an unknown trigger", { messages: [good], trigger: "explode" }],
    ["a trigger that is not a string", { messages: [good], trigger: 7 }],
  ];
  for (const [label, body] of badBodies) {
    it(`answers ${label} with 400 chat/invalid-argument and stores nothing`, async () => {
      const chatId = `bad-${crypto.randomUUID()}`;
      const response = await fetch(`${dev.url}/chat`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id: chatId, ...(body as object) }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: "chat/invalid-argument" } });
      expect((await fetch(`${dev.url}/chat/${chatId}/messages`)).status).toBe(404);
      expect(await transport.reconnectToStream({ chatId })).toBeNull();
    });
  }

  it("shows a stopped turn to a reload once, marked stopped", async () => {
    const { chunks, reader } = await readSome(await send("stop-reload", [ask("u1", "hello")]), 8);
    const answerId = (chunks[0] as { messageId: string }).messageId;
    const stop = await fetch(`${dev.url}/chat/stop-reload/stop`, { method: "POST" });
    expect(await stop.json()).toMatchObject({ stopped: true });
    const seen = [...chunks, ...(await readAll(reader))];
    expect(seen.at(-1)).toEqual({ type: "abort", reason: "stopped by the user" });
    // A reload: the client resumes (nothing is streaming) and loads the history.
    expect(await transport.reconnectToStream({ chatId: "stop-reload" })).toBeNull();
    const history = await historyOf("stop-reload", 2);
    expect(history.messages.filter((message) => message.id === answerId)).toHaveLength(1);
    expect(history.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(history.ends[answerId]).toEqual({ state: "stopped", reason: "stopped by the user" });
    // The history holds what the stopping client saw, as the AI SDK assembles it.
    expect(history.messages[1]?.parts).toEqual((await assembleChunks(seen))?.parts);
  });
  it("finishes a turn whose live attempt and then its recovery are SIGKILLed, and a reload shows the whole answer", async () => {
    const { chunks } = await readSome(await send("recovery-killed", [ask("u1", "hello")]), 20);
    const answerId = (chunks[0] as { messageId: string }).messageId;
    await dev.kill();
    dev = await dev.restart();
    // A resume tails the recovery (the demo keeps interrupted turns for it): its first buffer is
    // what was stored before the kill, the next one is the recovery writing. Kill it there.
    const resumed = await fetch(`${dev.url}/chat/recovery-killed/stream`);
    expect(resumed.status).toBe(200);
    const raw = (resumed.body as ReadableStream<Uint8Array>).getReader();
    const head = new TextDecoder().decode((await raw.read()).value);
    expect(head.startsWith(`data: {"type":"start","messageId":"${answerId}"`)).toBe(true);
    const next = await raw.read();
    expect(next.done).toBe(false);
    await dev.kill();
    dev = await dev.restart();
    transport = new DefaultChatTransport({ api: `${dev.url}/chat` });
    let history: History = { messages: [], ends: {} };
    for (let look = 0; look < 150 && history.ends[answerId] === undefined; look++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const response = await fetch(`${dev.url}/chat/recovery-killed/messages`);
      if (response.ok) history = (await response.json()) as History;
    }
    expect(history.messages.filter((message) => message.id === answerId)).toHaveLength(1);
    const end = history.ends[answerId];
    console.info(`a turn killed twice (live, then in its recovery) ended: ${JSON.stringify(end)}`);
    const answer = history.messages[1] as UIMessage;
    // A turn survives a kill of its recovery too (maxRecoveries, 2 by default): the second
    // recovery finishes it, and the history holds the same message as an uninterrupted turn's.
    expect(end).toEqual({ state: "finished" });
    expect(answer.parts).toEqual(reference?.parts);
    expect(await transport.reconnectToStream({ chatId: "recovery-killed" })).toBeNull();
  });
});

describe("a chat turn whose recovery fails, then a reload", () => {
  let dev: WranglerDev;

  beforeAll(async () => {
    // The recovery of a turn cut by a restart ends it with an error (a host whose model cannot
    // continue), 2 s after the restart, with no client attached.
    dev = await startWranglerDev({
      cwd: demoDir,
      vars: { CHAT_TOKEN_DELAY_MS: "20", CHAT_RECOVERY: "end", CHAT_RECOVERY_MS: "2000" },
    });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("shows the partial answer with its reasoning and the recovery's error to a reload after wrangler dev is SIGKILLed mid-turn", async () => {
    let transport = new DefaultChatTransport<UIMessage>({ api: `${dev.url}/chat` });
    const sent = await transport.sendMessages({
      chatId: "recovery-failed",
      messages: [ask("u1", "hello")],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    const { chunks } = await readSome(sent, 20);
    const answerId = (chunks[0] as { messageId: string }).messageId;
    await dev.kill();
    dev = await dev.restart();
    transport = new DefaultChatTransport<UIMessage>({ api: `${dev.url}/chat` });
    let history: History = { messages: [], ends: {} };
    for (let look = 0; look < 100 && history.ends[answerId] === undefined; look++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const response = await fetch(`${dev.url}/chat/recovery-failed/messages`);
      if (response.ok) history = (await response.json()) as History;
    }
    expect(history.ends[answerId]).toEqual({
      state: "failed",
      errorText: "The answer was interrupted (the server restarted) and could not be completed.",
    });
    const answer = history.messages[1] as UIMessage;
    expect(answer.id).toBe(answerId);
    expect(answer.parts[0]).toMatchObject({ type: "reasoning", state: "done" });
    expect(textOf(answer).length).toBeGreaterThan(0);
    // Nothing is streaming any more: a reloading client resumes nothing and reads the history.
    expect(await transport.reconnectToStream({ chatId: "recovery-failed" })).toBeNull();
  });
});
