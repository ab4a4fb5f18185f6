import type { Streams } from "@durablekit/streams";

/**
 * The reads of a log the protocol's GET and HEAD make: those of `Streams`, or of a read-only source
 * mounted beside it (`DurableStreamsSource`, through `sourceLog`).
 */
export type ProtocolLog = Pick<Streams, "status" | "readPage" | "readBatches" | "touch">;
