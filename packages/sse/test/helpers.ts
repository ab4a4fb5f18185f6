import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { fixtureObjects } from "@durablekit/test-kit";
import type { Fixture } from "./fixtures/worker";

/** Fresh fixture objects per call, so tests never share streams; `inFixture` runs inside one. */
export const { freshStub, inFixture } = fixtureObjects<DurableObjectStub<Fixture>, Fixture>(
  env.FIXTURE,
  (stub, fn) => runInDurableObject(stub, fn),
);

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
