import type { TaskStepSnapshot } from "@durablekit/tasks";

/**
 * What two runs of the same definition in two objects may differ by and still be the same run:
 * the values the engine made (the run id) or journaled once per run (an order id made by
 * `crypto.randomUUID()` inside a step, a timestamp a step read). Each is a fact of its run, kept by
 * the journal for every replay of that run, and different in every object; comparing them across
 * objects would report every crash. They are replaced, wherever they appear (in the result, the
 * effects, the streams, inside longer strings such as idempotency keys), by a name saying where
 * the run got them: `<runId>`, `<step:order-id>`, `<step:quote.at>`.
 *
 * Only what looks made per object is replaced: a string of 8 characters or more (ids, ISO times)
 * and a number of magnitude 1,000,000 or more (epoch times), where the two runs' journals differ at
 * the same step and path. A small count a step journaled differently (a step that ran again and
 * saw another attempt number) is still compared.
 */
export interface RunFacts {
  runId: string;
  /** The run's journaled steps (the `Tasks`' `steps(runId)`), or null when it could not be read. */
  steps: readonly TaskStepSnapshot[] | null;
}

/** One value of each run at the same place, and the name both are compared as. */
interface Alias {
  baseline: string;
  outcome: string;
  name: string;
  /** A number is replaced where it stands alone; a string wherever it appears. */
  number: boolean;
}

/** The aliases of two runs: what each run made for itself, named by where it made it. */
export function aliasesOf(baseline: RunFacts, outcome: RunFacts): Alias[] {
  const aliases: Alias[] = [];
  if (baseline.runId !== outcome.runId) {
    aliases.push({
      baseline: escaped(baseline.runId),
      outcome: escaped(outcome.runId),
      name: "<runId>",
      number: false,
    });
  }
  const theirs = new Map((outcome.steps ?? []).map((s) => [s.name, s]));
  for (const mine of baseline.steps ?? []) {
    const other = theirs.get(mine.name);
    if (other === undefined || mine.state !== "completed" || other.state !== "completed") continue;
    pair(mine.result, other.result, `<step:${mine.name}`, aliases);
  }
  // Longest first: an id inside a longer id is replaced after it.
  return aliases.sort((a, b) => b.baseline.length - a.baseline.length);
}

function pair(a: unknown, b: unknown, path: string, out: Alias[]): void {
  if (a instanceof Date && b instanceof Date) {
    pair(a.getTime(), b.getTime(), path, out);
    pair(a.toISOString(), b.toISOString(), path, out);
    return;
  }
  if (typeof a === "string" && typeof b === "string") {
    if (a !== b && a.length >= 8 && b.length >= 8) {
      out.push({ baseline: escaped(a), outcome: escaped(b), name: `${path}>`, number: false });
    }
    return;
  }
  if (typeof a === "number" && typeof b === "number") {
    if (a !== b && Math.abs(a) >= 1_000_000 && Math.abs(b) >= 1_000_000) {
      out.push({ baseline: String(a), outcome: String(b), name: `${path}>`, number: true });
      // An epoch time also appears as the Date made of it (a result's `new Date(placedAt)`).
      if (isEpochMs(a) && isEpochMs(b)) {
        pair(new Date(a).toISOString(), new Date(b).toISOString(), path, out);
      }
    }
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    for (const [i, x] of a.entries()) pair(x, b[i], `${path}[${i}]`, out);
    return;
  }
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    for (const key of Object.keys(a)) {
      pair(
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        `${path}.${key}`,
        out,
      );
    }
  }
}

/** Between 1973 and 5138, in milliseconds. */
function isEpochMs(n: number): boolean {
  return Number.isInteger(n) && n >= 1e11 && n < 1e14;
}

/** A string as it appears inside JSON text. */
function escaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** JSON text with one side's values replaced by their aliases' names. */
export function withAliases(
  text: string | undefined,
  aliases: readonly Alias[],
  side: "baseline" | "outcome",
): string | undefined {
  if (text === undefined) return undefined;
  let out = text;
  for (const alias of aliases) {
    const value = alias[side];
    const name = escaped(alias.name);
    out = alias.number
      ? out.replace(new RegExp(`(?<![\\w.])${value.replace(".", "\\.")}(?![\\w.])`, "g"), name)
      : out.split(value).join(name);
  }
  return out;
}

/**
 * What one attempt of a run added to the run's effects, as descriptions that compare equal when
 * two attempts did the same thing: an array's new element (`$.ledger[] "charge 5"`), a counter's
 * increase (`$.charged +5`), a value set (`$.status = "paid"`).
 */
export function additions(before: unknown, after: unknown, path = "$"): string[] {
  if (Array.isArray(after)) {
    const left = new Map<string, number>();
    for (const x of Array.isArray(before) ? before : []) {
      const k = JSON.stringify(x);
      left.set(k, (left.get(k) ?? 0) + 1);
    }
    const out: string[] = [];
    for (const x of after) {
      const k = JSON.stringify(x);
      const n = left.get(k) ?? 0;
      if (n > 0) left.set(k, n - 1);
      else out.push(`${path}[] ${k}`);
    }
    return out;
  }
  if (after !== null && typeof after === "object") {
    const was = before !== null && typeof before === "object" ? before : {};
    return Object.entries(after as Record<string, unknown>).flatMap(([key, value]) =>
      additions((was as Record<string, unknown>)[key], value, `${path}.${key}`),
    );
  }
  if (typeof after === "number" && typeof before === "number") {
    return after > before ? [`${path} +${after - before}`] : [];
  }
  return JSON.stringify(before) === JSON.stringify(after)
    ? []
    : [`${path} = ${JSON.stringify(after)}`];
}

/** The descriptions both lists hold (as many times as both hold them). */
export function repeated(first: readonly string[], second: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const x of first) left.set(x, (left.get(x) ?? 0) + 1);
  const out: string[] = [];
  for (const x of second) {
    const n = left.get(x) ?? 0;
    if (n > 0) {
      left.set(x, n - 1);
      out.push(x);
    }
  }
  return out;
}
