// Types for `cloudflare:workers`' `env` inside the workerd tests.
declare namespace Cloudflare {
  interface Env {
    FIXTURE: DurableObjectNamespace<import("./fixtures/worker").Fixture>;
    FAN_PARENT: DurableObjectNamespace<import("./fixtures/fan-out").FanParent>;
    FAN_SHARD: DurableObjectNamespace<import("./fixtures/fan-out").FanShard>;
    LOADER: WorkerLoader;
  }
  interface GlobalProps {
    mainModule: typeof import("./fixtures/worker");
    durableNamespaces: "Fixture" | "FanParent" | "FanShard";
  }
}
