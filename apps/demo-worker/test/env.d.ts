// Types for `cloudflare:workers`' `env` and `exports` inside the workerd tests.
type DemoEnv = import("../src/env").Env;

declare namespace Cloudflare {
  interface Env extends DemoEnv {}
  interface GlobalProps {
    mainModule: typeof import("../src/index");
    durableNamespaces: "Workspace";
  }
}
