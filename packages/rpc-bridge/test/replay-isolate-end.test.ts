import { evictDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { freshReplay, inReplay } from "./helpers";

/**
 * Whether the object evicts (`evictDurableObject` answers) within `ms`: it does not while an
 * isolate of one of its runs keeps running. A behaviour check with a generous deadline, not a
 * measurement.
 */
async function evictsWithin(stub: DurableObjectStub, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([evictDurableObject(stub).then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("a run's isolate ends with the run", () => {
  it("stops the isolate of a replay run released with a 10-minute timer pending: the object evicts within 2 s", async () => {
    const stub = freshReplay();
    const first = await inReplay(stub, (i) =>
      i.executor.execute(
        `import { approval } from "test:replay";
         export default async function () {
           setTimeout(() => {}, 600_000);
           return await approval("ok?");
         }`,
        undefined,
        { id: "timer-left" },
      ),
    );
    expect(first.state).toBe("interrupted");
    expect(await evictsWithin(stub, 2_000)).toBe(true);
  });

  it("stops the isolate of a fail run ended by bridge/run-timeout while its program keeps a setInterval: the object evicts within 2 s", async () => {
    const stub = freshReplay();
    const done = await inReplay(stub, (i) =>
      i.create({ limits: { runTimeoutMs: 300 } }).execute(
        `export default async function () {
             setInterval(() => {}, 50);
             await new Promise(() => {});
           }`,
        undefined,
        { id: "interval-left", onInterrupt: "fail" },
      ),
    );
    expect(done).toMatchObject({ state: "failed", error: { code: "bridge/run-timeout" } });
    expect(await evictsWithin(stub, 2_000)).toBe(true);
  });
});
