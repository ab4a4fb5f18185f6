/**
 * A package's event sink: calls the host's `onEvent` listener synchronously with each event. A
 * listener that throws never breaks the operation that emitted the event: its error is reported
 * with `console.warn` (naming the package) and the event is dropped. Every package handles listener
 * errors this one way.
 *
 * @param source - the package name used in the warning, e.g. `"@durablekit/tasks"`.
 * @param listener - the host's `onEvent` option, if any.
 * @returns an emit function; a no-op when there is no listener.
 */
export function createEmitter<Event>(
  source: string,
  listener: ((event: Event) => void) | undefined,
): (event: Event) => void {
  if (listener === undefined) return () => {};
  return (event) => {
    try {
      listener(event);
    } catch (error) {
      console.warn(`${source}: the onEvent listener threw; the event was dropped.`, error);
    }
  };
}
