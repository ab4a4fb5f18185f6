const encoder = new TextEncoder();

/** UTF-8 bytes of a string, with one shared encoder. */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** A chunk frame of `sseResponse`: `id: <seq>`, one `data:` line, a blank line. */
export function chunkFrame(seq: number, data: string): string {
  return `id: ${seq}\ndata: ${data}\n\n`;
}

/** A named control frame of `sseResponse`: `event: <name>`, its JSON data on one line. */
export function eventFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The heartbeat comment: ignored by every SSE parser, it keeps idle connections open. */
export const HEARTBEAT_FRAME = ": heartbeat\n\n";

/**
 * The `data:` lines of one event carrying `payload`, split on every SSE line terminator (CRLF, LF,
 * CR) so the payload can never end the event or start another one. A parser joins the lines with
 * `\n`. A line that starts with a space gets one more, because parsers strip one leading space.
 */
export function dataLines(payload: string): string {
  let out = "";
  for (const line of payload.split(/\r\n|\r|\n/)) {
    out += line.startsWith(" ") ? `data: ${line}\n` : `data:${line}\n`;
  }
  return out;
}

/** A complete event of the Durable Streams protocol's SSE mode (`event: data` or `event: control`). */
export function protocolEvent(event: "data" | "control", payload: string): string {
  return `event: ${event}\n${dataLines(payload)}\n`;
}

/**
 * Standard base64 (RFC 4648, with padding) of some bytes, by the runtime's own
 * `Uint8Array.prototype.toBase64` (workerd has it; TypeScript's ES2023 lib does not declare it yet).
 */
export function base64(bytes: Uint8Array): string {
  return (bytes as Uint8Array & { toBase64(): string }).toBase64();
}
