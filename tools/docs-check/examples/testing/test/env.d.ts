declare namespace Cloudflare {
  interface Env {
    ORDERS: DurableObjectNamespace<import("../src/index").Orders>;
    LOADER: WorkerLoader;
  }
}
interface Env extends Cloudflare.Env {}
