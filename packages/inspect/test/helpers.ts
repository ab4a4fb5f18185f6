import { env, runInDurableObject } from "cloudflare:test";
import { fixtureObjects } from "@durablekit/test-kit";
import type { Fixture } from "./fixtures/worker";

/** Fresh fixture objects per call, so tests never share streams or turns. */
export const { freshStub, inFixture } = fixtureObjects<DurableObjectStub<Fixture>, Fixture>(
  env.FIXTURE,
  (stub, fn) => runInDurableObject(stub, fn),
);

/** The header the fixture's `authorize` lets through. */
export const TOKEN = { "x-inspect-token": "let-me-in" };

/** A GET of an inspector route on `stub`, authorized unless `headers` says otherwise. */
export function get(
  stub: DurableObjectStub<Fixture>,
  path: string,
  init: RequestInit = { headers: TOKEN },
): Promise<Response> {
  return stub.fetch(`https://inspect.test${path}`, init);
}

/** Reads SSE events from a response until `done` says so or `ms` passes. */
export async function events(
  response: Response,
  done: (seen: Array<{ event: string; data: unknown }>) => boolean,
  ms = 3000,
) {
  const reader = (response.body as ReadableStream<Uint8Array>)
    .pipeThrough(new TextDecoderStream())
    .getReader();
  const seen: Array<{ event: string; data: unknown }> = [];
  let buffer = "";
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !done(seen)) {
    const { value, done: ended } = await reader.read();
    if (ended) break;
    buffer += value;
    let end = buffer.indexOf("\n\n");
    while (end !== -1) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (event !== undefined && data !== undefined) seen.push({ event, data: JSON.parse(data) });
      end = buffer.indexOf("\n\n");
    }
  }
  await reader.cancel();
  return seen;
}
