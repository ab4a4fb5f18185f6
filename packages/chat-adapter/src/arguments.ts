import { createOptionChecks } from "@durablekit/compose";
import { ChatArgumentError } from "./errors";

/** The option checks of this package, built once: each failure throws a `ChatArgumentError` (`chat/invalid-argument`). */
export const check = createOptionChecks((message) => new ChatArgumentError(message));
