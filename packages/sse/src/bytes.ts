const CHUNK = 0x8000;

/** Standard base64 (RFC 4648, with padding) of some bytes. */
export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  // String.fromCharCode takes its arguments on the stack: convert in slices, not all at once.
  for (let index = 0; index < bytes.length; index += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(index, index + CHUNK));
  }
  return btoa(binary);
}

/** The bytes of several arrays, back to back. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.byteLength;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
