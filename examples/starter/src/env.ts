import type { Counter } from "./counter";

/** Bindings of the starter Worker, as declared in `wrangler.jsonc`. */
export interface Env {
  /** One `Counter` object per name; the Worker uses one, named `"default"`. */
  COUNTERS: DurableObjectNamespace<Counter>;
}
