/**
 * The error a demo host function throws for a bad argument: a TypeError with a `code` (e.g.
 * `E_JOB_OPTIONS`), which the program catches as a TypeError with that code, live or replayed.
 */
export function hostTypeError(message: string, code: string): TypeError {
  return Object.assign(new TypeError(message), { code });
}

/**
 * The id in the `{ id }` a demo object (`Job`, `Run`, `Process`) serialized to, as its module's
 * `[handle.revive]` map receives it.
 * @throws TypeError `E_REVIVE` when it is not `{ id: string }`.
 */
export function revivedId(value: unknown, kind: string): string {
  const id = (value as { id?: unknown } | null)?.id;
  if (typeof id !== "string") {
    throw hostTypeError(`A ${kind} is revived from { id: string }.`, "E_REVIVE");
  }
  return id;
}
