/** Longest pattern (characters) and most segments a subscription pattern may have. */
export const MAX_PATTERN_LENGTH = 256;
export const MAX_PATTERN_SEGMENTS = 32;

/** A path's segments, without empty ones (leading, trailing or doubled slashes). */
export function segmentsOf(path: string): string[] {
  return path.split("/").filter((segment) => segment.length > 0);
}

/** A path with no leading or trailing slash. */
export function normalizePath(path: string): string {
  return segmentsOf(path).join("/");
}

/**
 * True when `path` matches the subscription `pattern`: `*` is exactly one path segment, `**` zero or
 * more, anything else a literal segment. The match is a table over (pattern segment, path segment)
 * pairs, so its cost is at most the product of the two lengths whatever the pattern — a pattern of
 * many `**` cannot make it backtrack.
 */
export function matchesPattern(pattern: string, path: string): boolean {
  const want = segmentsOf(pattern);
  const have = segmentsOf(path);
  // reach[j]: the first i pattern segments can match the first j path segments.
  let reach = new Array<boolean>(have.length + 1).fill(false);
  reach[0] = true;
  for (const segment of want) {
    const next = new Array<boolean>(have.length + 1).fill(false);
    if (segment === "**") {
      let any = false;
      for (let j = 0; j <= have.length; j++) {
        any = any || (reach[j] as boolean);
        next[j] = any;
      }
    } else {
      for (let j = 1; j <= have.length; j++) {
        next[j] = (reach[j - 1] as boolean) && (segment === "*" || segment === have[j - 1]);
      }
    }
    reach = next;
  }
  return reach[have.length] as boolean;
}
