// Types for `cloudflare:workers`' `env` and `exports` inside the workerd tests.
type StarterEnv = import("../src/env").Env;

declare namespace Cloudflare {
  interface Env extends StarterEnv {
    /** Test-only (test/wrangler.jsonc): a Counter with a TestingProbe, for the crash test. */
    CRASH_COUNTERS: DurableObjectNamespace<import("./crash-counter").CrashCounter>;
  }
  interface GlobalProps {
    mainModule: typeof import("./worker");
    durableNamespaces: "Counter" | "CrashCounter";
  }
}
