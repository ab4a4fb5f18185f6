/** Error paths of the encoder: `args[0].when`, `value.m.get("k")`, `value.s.values()[1]`. */

/**
 * A step in an error path that is not a property or index: a Map key or value, a Set element, a
 * handle's value. Its text is built only when an error names the path.
 */
export class Step {
  constructor(
    readonly kind: "key" | "value" | "element" | "handle",
    readonly index: number,
    readonly key?: unknown,
  ) {}

  get text(): string {
    switch (this.kind) {
      case "key":
        return `.keys()[${this.index}]`;
      case "value":
        return typeof this.key === "string" || typeof this.key === "number"
          ? `.get(${JSON.stringify(this.key)})`
          : `.values()[${this.index}]`;
      case "element":
        return `.values()[${this.index}]`;
      default:
        return "[handle.serialize]().value";
    }
  }
}

/** One step of a path: a property, an index, or a {@link Step}. */
export type Segment = string | number | Step;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** The path of the first `depth` segments under the root `label`. */
export function formatPath(label: string, segments: readonly Segment[], depth: number): string {
  let path = label;
  for (let i = 0; i < depth; i++) {
    const s = segments[i] as Segment;
    if (typeof s === "number") path += `[${s}]`;
    else if (typeof s === "string") path += IDENTIFIER.test(s) ? `.${s}` : `[${JSON.stringify(s)}]`;
    else path += s.text;
  }
  return path;
}
