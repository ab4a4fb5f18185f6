declare namespace Cloudflare {
  interface Env {
    ORDERS: DurableObjectNamespace<import("../src/index").Orders>;
  }
}
interface Env extends Cloudflare.Env {}
