import type { StreamValue, StreamWriteOptions, StreamWriteResult } from "@durablekit/streams";
import { readWriteBody, tooManyMessages } from "./body";
import { storedBytes, storedMessage, strictUtf8 } from "./codec";
import { writeErrorResponse } from "./errors-map";
import { closedFlag, H, isJsonMode, mediaType, parseProducer } from "./headers";
import { parseJsonBody } from "./json-mode";
import { formatOffset } from "./offsets";
import { baseHeaders, problem } from "./responses";
import type { ProtocolContext } from "./types";

/**
 * POST: appends a body (flattened into messages in JSON mode), optionally closing the stream in
 * the same write, as an idempotent producer when the three producer headers are present
 * (protocol §5.2, §5.2.1, §5.3). One `Streams.write`, so the append, the producer's state and the
 * closure commit together; it runs through the handler's group commit, so concurrent appends
 * share commits and each is answered once its own is durable.
 */
export async function handlePost(
  ctx: ProtocolContext,
  request: Request,
  streamId: string,
): Promise<Response> {
  const headers = request.headers;
  const close = closedFlag(headers);
  const producer = parseProducer(headers);
  if (!producer.ok) return problem(400, producer.reason);
  const writerSeq = headers.get(H.seq);
  const body = await readWriteBody(request, ctx.maxWriteBytes);
  if (body instanceof Response) return body;
  if (body.byteLength === 0 && !close) {
    return problem(400, "An append needs a body; to close the stream send Stream-Closed: true.");
  }
  const view = await ctx.view(streamId);
  if (view.kind === "absent") return problem(404, `Stream "${streamId}" does not exist.`);
  if (view.kind === "gone") return problem(410, `Stream "${streamId}" was deleted.`);
  const { status } = view;

  const values: StreamValue[] = [];
  if (body.byteLength > 0) {
    const contentType = headers.get("content-type");
    if (contentType === null || contentType.trim() === "") {
      return problem(400, "An append with a body needs a Content-Type.");
    }
    // A closed stream is reported first (protocol §5.2 error precedence), unless a producer may be
    // retrying the write that closed it.
    if (status.state !== "streaming" && producer.value === null) {
      return problem(409, "The stream is closed; it accepts no more appends.", {
        [H.closed]: "true",
        [H.nextOffset]: formatOffset(status.cursor),
      });
    }
    if (mediaType(contentType) !== mediaType(status.contentType)) {
      return problem(
        409,
        `The stream's content type is ${status.contentType}, not ${contentType}.`,
      );
    }
    if (isJsonMode(status.contentType)) {
      let text: string;
      try {
        text = strictUtf8.decode(body);
      } catch {
        return problem(400, "A JSON body must be UTF-8.");
      }
      const parsed = parseJsonBody(text, false);
      if (!parsed.ok) return problem(400, parsed.reason);
      const tooMany = tooManyMessages(parsed.messages, ctx.maxWriteMessages);
      if (tooMany) return tooMany;
      for (const message of parsed.messages) values.push(storedMessage(status.encoding, message));
    } else {
      const value = storedBytes(status.encoding, body);
      if (value === null) {
        return problem(400, `The body cannot be stored in this ${status.encoding} stream.`);
      }
      values.push(value);
    }
  }

  const options: StreamWriteOptions = {};
  if (producer.value !== null) options.producer = producer.value;
  if (writerSeq !== null) options.writerSeq = writerSeq;
  if (close) options.settle = true;
  let result: StreamWriteResult;
  try {
    // Answered only once the commit holding the write is durable; appends arriving meanwhile share
    // the next commit (GroupCommit).
    const write = () => {
      const written = ctx.streams.write(streamId, values, options);
      // A write that stored nothing (a producer retry, a repeated close) still counts as activity
      // for a sliding TTL; stored chunks and settlements refresh it themselves.
      if (written.duplicate || (values.length === 0 && !written.settled)) {
        ctx.streams.touch(streamId);
      }
      return written;
    };
    const changed = ctx.changed;
    result = await ctx.commits.run(
      changed === null
        ? write
        : // The hub's notice lands with the append or not at all.
          () =>
            ctx.store.transaction(() => {
              const written = write();
              if (!written.duplicate && values.length > 0) changed(streamId);
              return written;
            }),
    );
  } catch (error) {
    const answer = writeErrorResponse(error, ctx.streams, streamId);
    if (answer === null) throw error;
    return answer;
  }

  const answer = baseHeaders({ [H.nextOffset]: formatOffset(result.cursor) });
  if (result.state !== "streaming") answer.set(H.closed, "true");
  if (result.producer !== undefined) {
    answer.set(H.producerEpoch, String(result.producer.epoch));
    answer.set(H.producerSeq, String(result.producer.seq));
  }
  const fresh = producer.value !== null && !result.duplicate && values.length > 0;
  return new Response(null, { status: fresh ? 200 : 204, headers: answer });
}
