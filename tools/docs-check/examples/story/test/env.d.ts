declare namespace Cloudflare {
  interface Env {
    STORIES: DurableObjectNamespace<import("../src/index").Stories>;
  }
  interface GlobalProps {
    mainModule: typeof import("../src/index");
    durableNamespaces: "Stories";
  }
}
interface Env extends Cloudflare.Env {}
