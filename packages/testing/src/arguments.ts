import { createOptionChecks } from "@durablekit/compose";
import { TestingError } from "./errors";

/** The option checks of this package, built once: each failure throws `testing/invalid-argument`. */
export const check = createOptionChecks(
  (message) => new TestingError("testing/invalid-argument", message),
);
