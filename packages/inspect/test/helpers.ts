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
