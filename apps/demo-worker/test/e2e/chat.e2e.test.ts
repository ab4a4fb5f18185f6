import { fileURLToPath } from "node:url";
import { startWranglerDev, type WranglerDev } from "@durablekit/wrangler-harness";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const demoDir = fileURLToPath(new URL("../..", import.meta.url));

const question: UIMessage = {
  id: "user-1",
  role: "user",
  parts: [{ type: "text", text: "Tell me about durable objects." }],
};

/** The last state of the assistant message a UI message chunk stream assembles. */
async function assemble(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage | undefined> {
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream<UIMessage>({ stream })) last = message;
  return last;
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

describe("AI SDK chat routes under wrangler dev, driven by the AI SDK's own client", () => {
  let dev: WranglerDev;
  let transport: DefaultChatTransport<UIMessage>;
  let reference: UIMessage | undefined;

  const send = (chatId: string, abortSignal?: AbortSignal) =>
    transport.sendMessages({
      chatId,
      messages: [question],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal,
    });

  beforeAll(async () => {
    dev = await startWranglerDev({ cwd: demoDir, vars: { CHAT_TOKEN_DELAY_MS: "30" } });
    transport = new DefaultChatTransport({ api: `${dev.url}/chat` });
    reference = await assemble(await send("uninterrupted"));
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("streams a whole assistant message from the scripted model", () => {
    expect(reference?.role).toBe("assistant");
    const text = reference?.parts.find((part) => part.type === "text");
    expect(text).toMatchObject({ type: "text", state: "done" });
    expect((text as { text: string }).text.split(" ").length).toBeGreaterThan(50);
  });

  it("assembles the same message when a turn is aborted mid-way and resumed with reconnectToStream", async () => {
    const abort = new AbortController();
    const { chunks } = await readSome(await send("aborted", abort.signal), 8);
    expect(chunks[0]).toMatchObject({ type: "start" });
    abort.abort();
    const resumed = await transport.reconnectToStream({ chatId: "aborted" });
    expect(resumed).not.toBeNull();
    const message = await assemble(resumed as ReadableStream<UIMessageChunk>);
    expect(message?.parts).toEqual(reference?.parts);
    // The resumed message is the turn's: the id its first chunk carried.
    expect(message?.id).toBe((chunks[0] as { messageId: string }).messageId);
  });

  it("finishes an interrupted turn after wrangler dev is SIGKILLed mid-turn and restarted", async () => {
    const { chunks } = await readSome(await send("killed"), 30);
    expect(chunks.length).toBe(30);
    await dev.kill();
    dev = await dev.restart();
    transport = new DefaultChatTransport({ api: `${dev.url}/chat` });
    const resumed = await transport.reconnectToStream({ chatId: "killed" });
    expect(resumed).not.toBeNull();
    const message = await assemble(resumed as ReadableStream<UIMessageChunk>);
    // Never truncated: the demo adopts the turn and finishes it from its deterministic script.
    expect(message?.parts).toEqual(reference?.parts);
    expect(message?.id).toBe((chunks[0] as { messageId: string }).messageId);
    // Finished: nothing is active any more.
    expect((await fetch(`${dev.url}/chat/killed/stream`)).status).toBe(204);
  });

  it("completes a turn SIGKILLed with no client attached on its own after the restart, and keeps its message once", async () => {
    // A client starts the turn and goes away after a few words; the server is then killed.
    const abort = new AbortController();
    const { chunks } = await readSome(await send("unattended", abort.signal), 12);
    const messageId = (chunks[0] as { messageId: string }).messageId;
    abort.abort();
    await dev.kill();
    dev = await dev.restart();
    transport = new DefaultChatTransport({ api: `${dev.url}/chat` });
    // No request at all: the object's alarm recovers the turn at the claim deadline (2 s) and the
    // model finishes it (about 60 words × 30 ms); only then is anything asked.
    await new Promise((resolve) => setTimeout(resolve, 2_000 + 60 * 30 + 2_000));
    // (A slow machine gets a few more seconds; the first look is usually the last.)
    let messages: UIMessage[] = [];
    for (let look = 0; look < 20 && messages.length < 2; look++) {
      if (look > 0) await new Promise((resolve) => setTimeout(resolve, 500));
      const response = await fetch(`${dev.url}/chat/unattended/messages`);
      expect(response.status).toBe(200);
      ({ messages } = (await response.json()) as { messages: UIMessage[] });
    }
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    const answer = messages[1] as UIMessage;
    expect(answer.id).toBe(messageId);
    expect(answer.parts.filter((part) => part.type === "text")).toEqual(
      reference?.parts.filter((part) => part.type === "text"),
    );
    expect((await fetch(`${dev.url}/chat/unattended/stream`)).status).toBe(204);
  });

  it("stops a turn from a second client: both readers see one abort, and the history keeps the partial answer", async () => {
    const { chunks: first, reader } = await readSome(await send("stopped"), 5);
    const other = await transport.reconnectToStream({ chatId: "stopped" });
    const stop = await fetch(`${dev.url}/chat/stopped/stop`, { method: "POST" });
    expect(stop.status).toBe(200);
    expect(await stop.json()).toMatchObject({ stopped: true });
    const rest: UIMessageChunk[] = [];
    for (let next = await reader.read(); !next.done; next = await reader.read())
      rest.push(next.value);
    const seenByStarter = [...first, ...rest];
    const seenByOther: UIMessageChunk[] = [];
    const otherReader = (other as ReadableStream<UIMessageChunk>).getReader();
    for (let next = await otherReader.read(); !next.done; next = await otherReader.read()) {
      seenByOther.push(next.value);
    }
    for (const seen of [seenByStarter, seenByOther]) {
      expect(seen.filter((chunk) => chunk.type === "abort")).toEqual([
        { type: "abort", reason: "stopped by the user" },
      ]);
      expect(seen.at(-1)).toEqual({ type: "abort", reason: "stopped by the user" });
    }
    expect(seenByOther).toEqual(seenByStarter);
    expect(await (await fetch(`${dev.url}/chat/stopped/stop`, { method: "POST" })).json()).toEqual({
      stopped: false,
      turnId: null,
    });
    // The run settles as stopped and remembers the partial answer once.
    let messages: UIMessage[] = [];
    for (let i = 0; i < 50 && messages.length < 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const response = await fetch(`${dev.url}/chat/stopped/messages`);
      if (response.ok) ({ messages } = (await response.json()) as { messages: UIMessage[] });
    }
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);
  });

  it("answers the history of an unknown chat with 404 demo/unknown-chat", async () => {
    const response = await fetch(`${dev.url}/chat/never-used/messages`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: "demo/unknown-chat" } });
  });

  it("answers a resume with no active turn with 204, which the client reads as nothing to resume", async () => {
    const response = await fetch(`${dev.url}/chat/${encodeURIComponent("never started")}/stream`);
    expect(response.status).toBe(204);
    expect(await transport.reconnectToStream({ chatId: "uninterrupted" })).toBeNull();
  });

  it("answers POST /chat with the UI message stream headers", async () => {
    const response = await fetch(`${dev.url}/chat`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id: "headers", messages: [question], trigger: "submit-message" }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(response.headers.get("x-accel-buffering")).toBe("no");
    const text = await response.text();
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    for (const frame of text.split("\n\n").filter(Boolean))
      expect(frame.startsWith("data: ")).toBe(true);
  });
});

describe("a turn of a 20 ms model SIGKILLed mid-answer, resumed by the AI SDK client after the restart", () => {
  /** The adapter's default `maxFlushDelayMs`: a written chunk is stored at most this long after. */
  const MAX_FLUSH_DELAY_MS = 50;
  const TOKEN_DELAY_MS = 20;
  let dev: WranglerDev;

  beforeAll(async () => {
    dev = await startWranglerDev({
      cwd: demoDir,
      // The resume below comes before the run's recovery (a minute away), and ends the turn.
      vars: {
        CHAT_TOKEN_DELAY_MS: String(TOKEN_DELAY_MS),
        CHAT_RECOVERY: "end",
        CHAT_RECOVERY_MS: "60000",
      },
    });
  });
  afterAll(async () => {
    await dev?.dispose();
  });

  it("starts with the turn's start and messageId, replays every stored chunk once in order, ends with an error, and loses at most the flush bound's worth", async () => {
    let transport = new DefaultChatTransport<UIMessage>({ api: `${dev.url}/chat` });
    const sent = await transport.sendMessages({
      chatId: "killed-steady",
      messages: [question],
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
    });
    // The model writes a chunk every 20 ms and never pauses: kill right after the 30th arrived.
    const { chunks: seen } = await readSome(sent, 30);
    await dev.kill();
    expect(seen).toHaveLength(30);
    dev = await dev.restart();
    transport = new DefaultChatTransport<UIMessage>({ api: `${dev.url}/chat` });
    const resumedStream = await transport.reconnectToStream({ chatId: "killed-steady" });
    expect(resumedStream).not.toBeNull();
    const resumed: UIMessageChunk[] = [];
    const reader = (resumedStream as ReadableStream<UIMessageChunk>).getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) {
      resumed.push(next.value);
    }
    // One start, with the id of the message the client already holds.
    expect(resumed[0]).toEqual(seen[0]);
    expect(resumed.filter((chunk) => chunk.type === "start")).toHaveLength(1);
    // Then what was stored before the kill: the chunks the client saw, from the first, once each,
    // in order (never one it did not see, never one twice) …
    const last = resumed[resumed.length - 1];
    expect(last).toMatchObject({ type: "error" });
    const stored = resumed.slice(1, -1);
    expect(stored).toEqual(seen.slice(1, 1 + stored.length));
    // … missing at most the chunks written in the last flush bound before the kill.
    const lost = seen.length - 1 - stored.length;
    expect(lost).toBeGreaterThanOrEqual(0);
    expect(lost).toBeLessThanOrEqual(Math.ceil(MAX_FLUSH_DELAY_MS / TOKEN_DELAY_MS));
    // The turn is over: nothing left to resume.
    expect((await fetch(`${dev.url}/chat/killed-steady/stream`)).status).toBe(204);
  });
});
