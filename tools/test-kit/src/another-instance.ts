import { withOverrides } from "./counting-state";

/**
 * The state of another instance of the same object, over the same storage: what a part built
 * after a restart would get. Parts refuse a second of their kind per state object (built per
 * request); a test that stands for a restart inside one `runInDurableObject` builds the new
 * instance's part over this instead.
 */
export function anotherInstance(ctx: DurableObjectState): DurableObjectState {
  return withOverrides(ctx, {});
}
