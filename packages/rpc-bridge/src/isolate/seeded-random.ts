import { replaceProperty } from "./replace-property";

/** The typed arrays `crypto.getRandomValues` fills (integer elements only, as the Web Crypto API says). */
const INTEGER_ARRAYS = [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  BigInt64Array,
  BigUint64Array,
];

/** What `crypto.getRandomValues` fills at most per call (the Web Crypto API's quota). */
const MAX_RANDOM_BYTES = 65536;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function rotl(x: number, n: number): number {
  return (x << n) | (x >>> (32 - n));
}

/** The word indices of one ChaCha20 double round: four column, then four diagonal quarter rounds. */
const DOUBLE_ROUND: ReadonlyArray<readonly [number, number, number, number]> = [
  [0, 4, 8, 12],
  [1, 5, 9, 13],
  [2, 6, 10, 14],
  [3, 7, 11, 15],
  [0, 5, 10, 15],
  [1, 6, 11, 12],
  [2, 7, 8, 13],
  [3, 4, 9, 14],
];

/** ChaCha20's quarter round (RFC 8439 §2.1) on words `a`, `b`, `c`, `d` of `x`; `Int32Array` wraps the sums. */
function quarterRound(x: Int32Array, a: number, b: number, c: number, d: number): void {
  x[a] = (x[a] as number) + (x[b] as number);
  x[d] = rotl((x[d] as number) ^ (x[a] as number), 16);
  x[c] = (x[c] as number) + (x[d] as number);
  x[b] = rotl((x[b] as number) ^ (x[c] as number), 12);
  x[a] = (x[a] as number) + (x[b] as number);
  x[d] = rotl((x[d] as number) ^ (x[a] as number), 8);
  x[c] = (x[c] as number) + (x[d] as number);
  x[b] = rotl((x[b] as number) ^ (x[c] as number), 7);
}

/**
 * The randomness of a replay run's program: one ChaCha20 keystream (RFC 8439: the 64-hex seed as
 * the 256-bit key, a zero nonce, block counter from 0) feeds `Math.random`,
 * `crypto.getRandomValues` and `crypto.randomUUID` in the order the program asks, so every attempt
 * of the execution sees the same values at the same points. The stream is as unpredictable as
 * ChaCha20 to whoever does not know the seed; the seed is stored with the execution.
 */
export class SeededRandom {
  // ── Keystream ──────────────────────────────────────────────────────────────

  /** ChaCha20's input block: constants, key, counter (word 12), nonce. */
  readonly #input = new Uint32Array(16);
  /** The working state of one block computation. */
  readonly #work = new Int32Array(16);
  /** The current keystream block, serialized little-endian. */
  readonly #block = new Uint8Array(64);
  /** Bytes of `#block` already used. Invariant: 64 means the next byte needs a new block. */
  #used = 64;

  /** @throws TypeError when `seed` is not 64 hexadecimal characters. */
  constructor(seed: string) {
    if (typeof seed !== "string" || !/^[0-9a-fA-F]{64}$/.test(seed)) {
      throw new TypeError("The replay seed must be 64 hexadecimal characters.");
    }
    const input = this.#input;
    input[0] = 0x61707865;
    input[1] = 0x3320646e;
    input[2] = 0x79622d32;
    input[3] = 0x6b206574;
    for (let i = 0; i < 8; i++) {
      // Key words are little-endian, as the RFC reads the key bytes.
      let word = 0;
      for (let b = 3; b >= 0; b--)
        word = (word << 8) | Number.parseInt(seed.slice(i * 8 + b * 2, i * 8 + b * 2 + 2), 16);
      input[4 + i] = word >>> 0;
    }
    // Words 12 (block counter) to 15 (nonce) start at zero.
  }

  /** Computes the next 64-byte block (the ChaCha20 block function: 20 rounds, then the input added). */
  #refill(): void {
    const x = this.#work;
    x.set(this.#input);
    for (let round = 0; round < 10; round++) {
      for (let q = 0; q < DOUBLE_ROUND.length; q++) {
        // Read by index: destructuring would go through the array iterator a program may replace.
        const r = DOUBLE_ROUND[q] as readonly [number, number, number, number];
        quarterRound(x, r[0], r[1], r[2], r[3]);
      }
    }
    const s = this.#input;
    const block = this.#block;
    for (let i = 0; i < 16; i++) {
      const word = ((x[i] as number) + (s[i] as number)) >>> 0;
      block[i * 4] = word & 0xff;
      block[i * 4 + 1] = (word >>> 8) & 0xff;
      block[i * 4 + 2] = (word >>> 16) & 0xff;
      block[i * 4 + 3] = word >>> 24;
    }
    // The 32-bit counter carries into the first nonce word (after 256 GiB of stream).
    s[12] = ((s[12] as number) + 1) >>> 0;
    if (s[12] === 0) s[13] = ((s[13] as number) + 1) >>> 0;
    this.#used = 0;
  }

  // ── Values ─────────────────────────────────────────────────────────────────

  /** Fills `bytes` with the next bytes of the stream. */
  fill(bytes: Uint8Array): void {
    for (let i = 0; i < bytes.length; i++) {
      if (this.#used === 64) this.#refill();
      bytes[i] = this.#block[this.#used++] as number;
    }
  }

  /** The next four bytes of the stream as an unsigned 32-bit integer (little-endian). */
  uint32(): number {
    if (this.#used > 60) this.#refill();
    const b = this.#block;
    const i = this.#used;
    this.#used += 4;
    return (
      ((b[i] as number) |
        ((b[i + 1] as number) << 8) |
        ((b[i + 2] as number) << 16) |
        ((b[i + 3] as number) << 24)) >>>
      0
    );
  }

  /** A double in [0, 1) with 53 random bits, like `Math.random`. */
  random(): number {
    const high = this.uint32() >>> 5;
    const low = this.uint32() >>> 6;
    return (high * 67108864 + low) / 9007199254740992;
  }

  /** A version 4 UUID in the canonical lower-case form, like `crypto.randomUUID`. */
  uuid(): string {
    const b = new Uint8Array(16);
    this.fill(b);
    b[6] = ((b[6] as number) & 0x0f) | 0x40;
    b[8] = ((b[8] as number) & 0x3f) | 0x80;
    let out = "";
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) out += "-";
      out += HEX[b[i] as number];
    }
    return out;
  }

  /**
   * `crypto.getRandomValues`: fills an integer typed array from the stream and returns it.
   * @throws DOMException `TypeMismatchError` for a float array, a DataView or anything else;
   * `QuotaExceededError` over 65536 bytes.
   */
  getRandomValues<T extends ArrayBufferView | null>(array: T): T {
    let integer = false;
    for (let i = 0; i < INTEGER_ARRAYS.length && !integer; i++) {
      integer = array instanceof (INTEGER_ARRAYS[i] as abstract new (...args: never[]) => object);
    }
    if (!integer) {
      throw new DOMException(
        "crypto.getRandomValues takes an integer typed array (Int8Array … BigUint64Array).",
        "TypeMismatchError",
      );
    }
    const view = array as unknown as ArrayBufferView;
    if (view.byteLength > MAX_RANDOM_BYTES) {
      throw new DOMException(
        `crypto.getRandomValues fills at most ${MAX_RANDOM_BYTES} bytes per call; this array has ${view.byteLength}.`,
        "QuotaExceededError",
      );
    }
    this.fill(new Uint8Array(view.buffer, view.byteOffset, view.byteLength));
    return array;
  }

  // ── Globals ────────────────────────────────────────────────────────────────

  /**
   * Makes `Math.random`, `crypto.getRandomValues` and `crypto.randomUUID` draw from this stream,
   * on the `crypto` object and on its prototype (so a method borrowed from `Crypto.prototype` is
   * the seeded one too).
   */
  install(global: typeof globalThis): void {
    replaceProperty(Math, "random", () => this.random());
    const crypto = (global as { crypto?: Crypto }).crypto;
    if (crypto === undefined) return;
    const getRandomValues = <T extends ArrayBufferView | null>(array: T): T =>
      this.getRandomValues(array);
    const randomUUID = (): string => this.uuid();
    const proto = Object.getPrototypeOf(crypto) as object | null;
    for (const target of proto === null ? [crypto] : [crypto, proto]) {
      replaceProperty(target, "getRandomValues", getRandomValues);
      replaceProperty(target, "randomUUID", randomUUID);
    }
  }
}
