/** Runs a callback inside a Durable Object: `runInDurableObject` from `cloudflare:test`, passed in so this module imports no test runtime. */
export type RunInObject<Stub, Instance> = (
  stub: Stub,
  callback: (instance: Instance, state: DurableObjectState) => unknown,
) => Promise<unknown>;

/** Fresh fixture objects for a package's workerd tests. */
export interface FixtureObjects<Stub, Instance> {
  /** A new object per call (named `<label>-<n>-<uuid>`), so tests never share state. */
  freshStub(label?: string): Stub;
  /** Runs `fn` inside `stub` (default: a fresh object). */
  inFixture<T>(
    fn: (fixture: Instance, state: DurableObjectState) => Promise<T> | T,
    stub?: Stub,
  ): Promise<T>;
}

/**
 * The fixture helpers every package's workerd tests use, over the package's fixture namespace:
 * `fixtureObjects<DurableObjectStub<Fixture>, Fixture>(env.FIXTURE, runInDurableObject)`.
 */
export function fixtureObjects<Stub, Instance>(
  namespace: { getByName(name: string): Stub },
  run: RunInObject<Stub, Instance>,
): FixtureObjects<Stub, Instance> {
  let counter = 0;
  const freshStub = (label = "t"): Stub => {
    counter += 1;
    return namespace.getByName(`${label}-${counter}-${crypto.randomUUID()}`);
  };
  return {
    freshStub,
    inFixture: <T>(
      fn: (fixture: Instance, state: DurableObjectState) => Promise<T> | T,
      stub: Stub = freshStub(),
    ) => run(stub, fn) as Promise<T>,
  };
}
