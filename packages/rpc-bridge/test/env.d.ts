// Types for `cloudflare:workers`' `env` and `exports` inside the workerd tests.
type FixtureEnv = import("./fixtures/worker").Env;

declare namespace Cloudflare {
  interface Env extends FixtureEnv {}
  interface GlobalProps {
    mainModule: typeof import("./fixtures/worker");
    durableNamespaces: "Fixture" | "ReplayFixture";
  }
}
