// Types for `cloudflare:workers`' `env` inside the workerd tests.
declare namespace Cloudflare {
  interface Env {
    FIXTURE: DurableObjectNamespace<import("./fixtures/worker").Fixture>;
    PER_STREAM: DurableObjectNamespace<import("./fixtures/worker").PerStream>;
    SUB_STREAM: DurableObjectNamespace<import("./fixtures/worker").SubStream>;
    HUB: DurableObjectNamespace<import("./fixtures/worker").Hub>;
    RECEIVER: DurableObjectNamespace<import("./fixtures/worker").Receiver>;
  }
}
