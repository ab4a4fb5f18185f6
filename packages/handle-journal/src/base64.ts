// Uint8Array.prototype.toBase64 / Uint8Array.fromBase64 (TC39, shipped in newer runtimes) are
// several times faster than btoa/atob over a binary string; use them where they exist.
const native = Uint8Array as unknown as {
  fromBase64?: (text: string) => Uint8Array;
  prototype: { toBase64?: (this: Uint8Array) => string };
};
const nativeTo = native.prototype.toBase64;
const nativeFrom = native.fromBase64;

const CHUNK = 0x8000;

/** Standard base64 (with padding) of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  if (nativeTo !== undefined) return nativeTo.call(bytes);
  let binary = "";
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]);
  }
  return btoa(binary);
}

/**
 * Bytes of standard base64 `text`.
 * @throws DOMException / SyntaxError when `text` is not base64 (the codec maps it to `journal/corrupt`).
 */
export function fromBase64(text: string): Uint8Array {
  if (nativeFrom !== undefined) return nativeFrom(text);
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}
