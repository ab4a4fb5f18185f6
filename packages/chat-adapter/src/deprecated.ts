// Names kept for compatibility: each type was renamed so that its name carries the package's
// noun (docs/composing.md, "Names of types"). They will be removed in 1.0.
import type { ChatStartTurnOptions, ChatUIMessageChunk } from "./index";

/** @deprecated Renamed {@link ChatStartTurnOptions}. */
export type StartTurnOptions = ChatStartTurnOptions;

/** @deprecated Renamed {@link ChatUIMessageChunk}. */
export type UIMessageChunk = ChatUIMessageChunk;
