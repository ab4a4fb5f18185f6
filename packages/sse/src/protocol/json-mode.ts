/**
 * JSON mode (protocol §9.1): an `application/json` stream stores messages, not bytes. A POST body
 * that is a JSON array is flattened one level (each element is a message); any other JSON value is
 * one message. Messages are kept as the producer wrote them — the exact text of each element — so
 * numbers beyond double precision, key order and spelling survive the round trip. Reads return the
 * messages of the range as one JSON array.
 */

/** The messages of a JSON-mode body, or why it is not one. */
export type JsonBody = { ok: true; messages: string[] } | { ok: false; reason: string };

const WHITESPACE = new Set([" ", "\t", "\n", "\r"]);

/** Splits a body into its messages. `text` must already be valid JSON. */
function split(text: string): string[] {
  let start = 0;
  while (start < text.length && WHITESPACE.has(text[start] as string)) start += 1;
  if (text[start] !== "[") return [text.trim()];
  const messages: string[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  let elementStart = start + 1;
  for (let index = start; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (escaped) escaped = false;
      else if (char === "\\") escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === "[" || char === "{") depth += 1;
    else if (char === "]" || char === "}") {
      depth -= 1;
      if (depth === 0) {
        const last = text.slice(elementStart, index).trim();
        if (last !== "") messages.push(last);
        break;
      }
    } else if (char === "," && depth === 1) {
      messages.push(text.slice(elementStart, index).trim());
      elementStart = index + 1;
    }
  }
  return messages;
}

/**
 * Validates a JSON-mode body and returns its messages. An empty array is refused unless
 * `allowEmpty` (a PUT may create an empty stream with `[]`; a POST of `[]` means nothing).
 */
export function parseJsonBody(text: string, allowEmpty: boolean): JsonBody {
  try {
    JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `The body is not valid JSON: ${(error as Error).message}` };
  }
  const messages = split(text);
  if (messages.length === 0 && !allowEmpty) {
    return { ok: false, reason: "An empty JSON array appends nothing; send at least one message." };
  }
  return { ok: true, messages };
}

/** The JSON array of some messages, as a read returns them. */
export function jsonArray(messages: readonly string[]): string {
  return `[${messages.join(",")}]`;
}
