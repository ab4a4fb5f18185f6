// Types for `cloudflare:workers`' `env` and `exports` inside the workerd tests.
type StarterEnv = import("../src/env").Env;

declare namespace Cloudflare {
  interface Env extends StarterEnv {}
  interface GlobalProps {
    mainModule: typeof import("../src/index");
    durableNamespaces: "Counter";
  }
}
