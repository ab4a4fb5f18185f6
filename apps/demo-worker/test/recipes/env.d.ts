// Types for `cloudflare:workers`' `env` inside the recipe tests.
declare namespace Cloudflare {
  interface Env {
    GETTING_STARTED: DurableObjectNamespace<import("./fixtures/worker").GettingStarted>;
    TASKS_AND_SSE: DurableObjectNamespace<import("./fixtures/worker").TasksAndSse>;
  }
}
