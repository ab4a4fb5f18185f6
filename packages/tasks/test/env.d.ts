// Types for `cloudflare:workers`' `env` inside the workerd tests.
declare namespace Cloudflare {
  interface Env {
    FIXTURE: DurableObjectNamespace<import("./fixtures/worker").Fixture>;
    PROGRAM: DurableObjectNamespace<import("./fixtures/program-host").ProgramHost>;
    PARENT: DurableObjectNamespace<import("./fixtures/child-objects").ParentObject>;
    SHARD: DurableObjectNamespace<import("./fixtures/child-objects").ShardObject>;
    DEFAULTS: DurableObjectNamespace<import("./fixtures/recovery-objects").DefaultsObject>;
    SLOW_CLAIM: DurableObjectNamespace<import("./fixtures/recovery-objects").SlowClaimObject>;
    FLOW: DurableObjectNamespace<import("./fixtures/flow-objects").FlowObject>;
    SCHEDULED: DurableObjectNamespace<import("./fixtures/flow-objects").ScheduleObject>;
    LOADER: WorkerLoader;
  }
  interface GlobalProps {
    mainModule: typeof import("./fixtures/worker");
    durableNamespaces:
      | "Fixture"
      | "ProgramHost"
      | "ParentObject"
      | "ShardObject"
      | "DefaultsObject"
      | "SlowClaimObject"
      | "FlowObject"
      | "ScheduleObject";
  }
}
