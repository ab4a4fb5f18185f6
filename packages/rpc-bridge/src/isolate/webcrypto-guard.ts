import { fromErrorRecord } from "@durablekit/handle-journal";
import { promiseRejected, ReflectApply, SafeMap, SafeSet } from "../shared/primordials";
import { replaceProperty } from "./replace-property";

type SubtleMethod = (...args: unknown[]) => Promise<unknown>;

/** Algorithms whose output is random on every call even with the same key and input. */
const RANDOMIZED: Readonly<Record<string, ReadonlySet<string>>> = {
  sign: new SafeSet(["ECDSA", "RSA-PSS"]),
  encrypt: new SafeSet(["RSA-OAEP"]),
  wrapKey: new SafeSet(["RSA-OAEP"]),
};

/** Where each guarded method takes its algorithm: `wrapKey(format, key, wrappingKey, algorithm)`. */
const ALGORITHM_ARGUMENT: Readonly<Record<string, number>> = { sign: 0, encrypt: 0, wrapKey: 3 };

function algorithmName(algorithm: unknown): string {
  const name =
    typeof algorithm === "string" ? algorithm : (algorithm as { name?: unknown } | null)?.name;
  return typeof name === "string" ? name.toUpperCase() : "";
}

/** RSA-PSS with a zero salt is deterministic; every other listed use is not. */
function isRandomized(method: string, algorithm: unknown): boolean {
  const name = algorithmName(algorithm);
  if (!RANDOMIZED[method]?.has(name)) return false;
  if (name === "RSA-PSS") return (algorithm as { saltLength?: unknown }).saltLength !== 0;
  return true;
}

/**
 * The Web Crypto calls a replay run's program may not make: every `crypto.subtle.generateKey`
 * (a new random key on each attempt), and `sign` (ECDSA, RSA-PSS with a salt), `encrypt` and
 * `wrapKey` (RSA-OAEP), whose output is random even for the same key and input. Each is refused
 * with an Error coded `bridge/replay-nondeterministic`, which the program may catch; the other
 * methods (digest, import, export, HMAC, AES with the program's IV, derivation from given keys)
 * are deterministic and stay as they are.
 */
export class WebCryptoGuard {
  // ── State ──────────────────────────────────────────────────────────────────

  /** The platform's methods, by name, called for what is not refused. */
  readonly #originals = new SafeMap<string, SubtleMethod>();

  /** The error a refused call rejects with: it says why, and what to do instead. */
  static refusal(what: string): Error {
    return fromErrorRecord({
      $error: {
        name: "BridgeError",
        code: "bridge/replay-nondeterministic",
        retryable: false,
        message: `${what} gives a different random result on every attempt, so a run with onInterrupt "replay" cannot repeat it. Pass keys (or signatures, ciphertexts) in as input or get them from a host module, or run the program with onInterrupt "fail" or "restart".`,
      },
    });
  }

  // ── Globals ────────────────────────────────────────────────────────────────

  /** Wraps the refused methods on `crypto.subtle` and on its prototype. */
  install(global: typeof globalThis): void {
    const subtle = (global as { crypto?: Crypto }).crypto?.subtle;
    if (subtle === undefined) return;
    const proto = Object.getPrototypeOf(subtle) as object | null;
    const targets = proto === null ? [subtle] : [subtle, proto];
    for (const method of ["generateKey", ...Object.keys(RANDOMIZED)]) {
      const original = (subtle as unknown as Record<string, unknown>)[method];
      if (typeof original !== "function") continue;
      this.#originals.set(method, original as SubtleMethod);
      const guarded = this.#guarded(method);
      for (const target of targets) replaceProperty(target, method, guarded);
    }
  }

  #guarded(method: string): SubtleMethod {
    const originals = this.#originals;
    return function (this: unknown, ...args: unknown[]): Promise<unknown> {
      if (method === "generateKey") {
        return promiseRejected(WebCryptoGuard.refusal("crypto.subtle.generateKey"));
      }
      const algorithm = args[ALGORITHM_ARGUMENT[method] ?? 0];
      if (isRandomized(method, algorithm)) {
        return promiseRejected(
          WebCryptoGuard.refusal(`crypto.subtle.${method} with ${algorithmName(algorithm)}`),
        );
      }
      return ReflectApply(originals.get(method) as SubtleMethod, this, args);
    };
  }
}
