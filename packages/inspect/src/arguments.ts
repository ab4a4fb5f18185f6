import { createOptionChecks } from "@durablekit/compose";
import { InspectError } from "./errors";

/** The option checks of this package, built once: each failure throws `inspect/invalid-argument`. */
export const check = createOptionChecks(
  (message) => new InspectError("inspect/invalid-argument", message),
);
