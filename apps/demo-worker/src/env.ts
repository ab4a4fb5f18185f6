import type { Workspace } from "./workspace";

/** Bindings of the demo Worker, as declared in `wrangler.jsonc`. */
export interface Env {
  WORKSPACE: DurableObjectNamespace<Workspace>;
  LOADER: WorkerLoader;
}
