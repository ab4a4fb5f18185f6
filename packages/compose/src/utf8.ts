/**
 * The UTF-8 length of `text` in bytes, counted without encoding it: what
 * `new TextEncoder().encode(text).byteLength` answers (a lone surrogate counts the 3 bytes of the
 * U+FFFD it encodes as). Every package's byte limit (`max…Bytes`) on text counts with this.
 */
export function utf8ByteLength(text: string): number {
  // Start from one byte per UTF-16 unit and add what each wider character takes beyond that.
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    if (unit < 0x800) {
      bytes += 1;
      continue;
    }
    // Three bytes for one unit; a surrogate pair is four bytes for its two units.
    bytes += 2;
    if (unit <= 0xdbff && unit >= 0xd800) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
  }
  return bytes;
}
