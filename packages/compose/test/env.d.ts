// Types for `cloudflare:workers`' `env` inside the workerd tests.
declare namespace Cloudflare {
  interface Env {
    FIXTURE: DurableObjectNamespace<import("./fixtures/worker").Fixture>;
    BARE: DurableObjectNamespace<import("./fixtures/worker").Bare>;
    UNDELEGATING: DurableObjectNamespace<import("./fixtures/worker").Undelegating>;
    KEY_VALUE: DurableObjectNamespace<import("./fixtures/worker").KeyValue>;
  }
}
