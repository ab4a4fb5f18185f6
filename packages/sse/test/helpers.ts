import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Fixture } from "./fixtures/worker";

let counter = 0;

/** A fresh fixture object per call, so tests never share streams. */
export function freshStub(label = "t"): DurableObjectStub<Fixture> {
  counter += 1;
  return env.FIXTURE.getByName(`${label}-${counter}-${crypto.randomUUID()}`);
}

/** Runs `fn` inside a fresh fixture object. */
export function inFixture<T>(
  fn: (fixture: Fixture, state: DurableObjectState) => Promise<T> | T,
  stub: DurableObjectStub<Fixture> = freshStub(),
): Promise<T> {
  return runInDurableObject(stub, fn);
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Reads a body to its end as text. */
export async function bodyText(response: Response): Promise<string> {
  return new TextDecoder().decode(await response.arrayBuffer());
}

/** Reads a body chunk by chunk (one entry per enqueue) until it ends or `until` matches the text so far. */
export async function readChunks(
  response: Response,
  until?: (text: string) => boolean,
): Promise<{ chunks: string[]; text: string; reader: ReadableStreamDefaultReader<Uint8Array> }> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const chunk = decoder.decode(value, { stream: true });
    chunks.push(chunk);
    text += chunk;
    if (until?.(text)) break;
  }
  return { chunks, text, reader };
}
