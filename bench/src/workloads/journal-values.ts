/**
 * The values the codec workloads encode and decode, the same for every side. Built fresh per call
 * so no side benefits from another's caches.
 */
export interface CodecShape {
  /** Metric key prefix, e.g. `call`. */
  key: string;
  /** What the shape stands for, for the table. */
  label: string;
  /** Iterations of encode+decode per round. */
  iterations: number;
  /** Whether plain `JSON.stringify` needs a replacer for it (it holds a BigInt). */
  needsReplacer?: boolean;
  make(): unknown;
}

/** A bridged call's arguments and result: small plain JSON. */
function callValue(): unknown {
  return {
    args: [{ name: "build", ref: "main", tags: ["ci", "nightly"], attempts: 3, dryRun: false }],
    result: { id: "job-42", status: "queued", position: 7, owner: { id: "u1", name: "Ada" } },
  };
}

/** A task step result using the types superjson carries. */
function typedValue(): unknown {
  return {
    startedAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)),
    bytesSeen: 12_345_678_901_234_567_890n,
    labels: new Set(["a", "b", "c"]),
    byId: new Map<string, unknown>([
      ["r1", { state: "done", at: new Date(Date.UTC(2026, 0, 1)) }],
      ["r2", { state: "running", at: new Date(Date.UTC(2026, 0, 2)) }],
    ]),
    retryAfter: undefined,
    source: new URL("https://example.com/jobs/42?x=1"),
    ratio: 0.25,
  };
}

/** A large result: 1,000 plain records (about 90 KB of JSON). */
function rowsValue(): unknown {
  return Array.from({ length: 1000 }, (_, i) => ({
    id: i,
    name: `row-${i}`,
    ok: i % 3 !== 0,
    score: i * 1.5,
    tags: ["t1", "t2"],
  }));
}

/** A failed call: an Error with a code, as a rejected host call carries it. */
function errorValue(): unknown {
  return {
    error: Object.assign(new RangeError("ref not found: main"), {
      code: "jobs/not-found",
      retryable: false,
    }),
  };
}

export const CODEC_SHAPES: readonly CodecShape[] = [
  { key: "call", label: "small call (plain JSON)", iterations: 60_000, make: callValue },
  {
    key: "typed",
    label: "typed value (Date/Map/Set/BigInt/URL)",
    iterations: 20_000,
    make: typedValue,
    needsReplacer: true,
  },
  { key: "rows", label: "1,000-row result (plain JSON)", iterations: 150, make: rowsValue },
  { key: "error", label: "error with code", iterations: 30_000, make: errorValue },
];
