/**
 * Splits `text` into parts of at most `maxUnits` UTF-16 code units, in order, never between the
 * halves of a surrogate pair: what a store does with a text longer than one row holds. The parts
 * joined give `text` back.
 */
export function splitText(text: string, maxUnits: number): string[] {
  const parts: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + maxUnits, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    parts.push(text.slice(at, end));
    at = end;
  }
  return parts;
}
