/** Building the annotation tree of an encoding (see codec-format.ts), bottom-up during the walk. */
import type { Annotation, Children } from "./codec-format";
import { defineOwn } from "./own-property";

/**
 * Adds a child's annotation under `escaped`, flattening an untyped child into dotted paths;
 * returns the children record, created on first use.
 */
export function addChild(
  children: Children | undefined,
  escaped: string,
  annotation: Annotation,
): Children {
  const out = children ?? {};
  if (Array.isArray(annotation)) {
    defineOwn(out, escaped, annotation);
    return out;
  }
  const nested = annotation as Children;
  for (const path of Object.keys(nested))
    defineOwn(out, `${escaped}.${path}`, nested[path] as Annotation);
  return out;
}
