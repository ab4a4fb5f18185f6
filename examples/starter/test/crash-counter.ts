import { TestingProbe } from "@durablekit/testing";
import { Counter } from "../src/counter";
import type { Env } from "../src/env";

/**
 * The starter's `Counter` as the crash test runs it: a `TestingProbe` gives its parts the test clock
 * and instruments `count@v1`, so a test can stop the run at any durable boundary. A test-only class
 * (bound in `test/wrangler.jsonc`), so the Worker you deploy carries no probe.
 */
export class CrashCounter extends Counter {
  constructor(ctx: DurableObjectState, env: Env) {
    const probe = new TestingProbe(ctx);
    super(ctx, env, { now: probe.now, instrument: (definitions) => probe.instrument(definitions) });
  }
}
