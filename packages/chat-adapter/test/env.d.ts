// Types for `cloudflare:workers`' `env` inside the workerd tests.
declare namespace Cloudflare {
  interface Env {
    FIXTURE: DurableObjectNamespace<import("./fixtures/worker").Fixture>;
    TURN_HOST: DurableObjectNamespace<import("./fixtures/worker").TurnHost>;
    HISTORY_HOST: DurableObjectNamespace<import("./fixtures/worker").HistoryHost>;
  }
}
