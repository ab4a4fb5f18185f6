import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { fixtureObjects } from "@durablekit/test-kit";
import type { ChatUIMessageChunk } from "../src/index";
import type { Fixture } from "./fixtures/worker";

/** Fresh fixture objects per call, so tests never share turns; `inFixture` runs inside one. */
export const { freshStub, inFixture } = fixtureObjects<DurableObjectStub<Fixture>, Fixture>(
  env.FIXTURE,
  (stub, fn) => runInDurableObject(stub, fn),
);

/** The chunks of a scripted answer: `start`, `text-start`, `count` deltas of ~`size` bytes, `text-end`, `finish`. */
export function scriptedChunks(count: number, size = 120): ChatUIMessageChunk[] {
  const chunks: ChatUIMessageChunk[] = [{ type: "text-start", id: "t" }];
  for (let i = 0; i < count; i++) {
    const pad = "x".repeat(Math.max(0, size - 40));
    chunks.push({ type: "text-delta", id: "t", delta: `${i} ${pad}` });
  }
  chunks.push({ type: "text-end", id: "t" }, { type: "finish" });
  return chunks;
}

/** The data frames of an SSE body, parsed; `[DONE]` kept as the string. */
export async function frames(response: Response): Promise<unknown[]> {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((frame) => frame.startsWith("data: "))
    .map((frame) => {
      const data = frame.slice(6);
      return data === "[DONE]" ? data : JSON.parse(data);
    });
}

/** Total SQLite row changes so far on this connection (`total_changes()`). */
export function totalChanges(state: DurableObjectState): number {
  return state.storage.sql.exec<{ n: number }>("SELECT total_changes() AS n").one().n;
}
