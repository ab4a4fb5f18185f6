import {
  isStreamsError,
  ProducerFencedError,
  ProducerSequenceError,
  StreamClosedError,
  type Streams,
} from "@durablekit/streams";
import { H } from "./headers";
import { formatOffset } from "./offsets";
import { problem } from "./responses";

/**
 * The protocol answer to an error a `Streams` write threw, or null for an error that is not the
 * client's (rethrown as a 500). `streamId` is read again for the final offset of a closed stream.
 */
export function writeErrorResponse(
  error: unknown,
  streams: Streams,
  streamId: string,
): Response | null {
  if (!isStreamsError(error)) return null;
  if (error instanceof StreamClosedError) {
    const cursor = streams.status(streamId)?.cursor ?? error.cursor;
    return problem(409, "The stream is closed; it accepts no more appends.", {
      [H.closed]: "true",
      ...(cursor === undefined ? {} : { [H.nextOffset]: formatOffset(cursor) }),
    });
  }
  if (error instanceof ProducerFencedError) {
    return problem(403, error.message, { [H.producerEpoch]: String(error.currentEpoch) });
  }
  if (error instanceof ProducerSequenceError) {
    if (error.code === "streams/producer-epoch-seq") return problem(400, error.message);
    return problem(409, error.message, {
      [H.expectedSeq]: String(error.expectedSeq),
      [H.receivedSeq]: String(error.receivedSeq),
    });
  }
  switch (error.code) {
    case "streams/writer-seq-regression":
      return problem(409, error.message);
    case "streams/too-large":
      return problem(413, error.message);
    case "streams/unserializable":
    case "streams/invalid-argument":
      return problem(400, error.message);
    case "streams/not-found":
      return problem(404, error.message);
    case "streams/conflict":
      return problem(409, error.message);
    default:
      return null;
  }
}
