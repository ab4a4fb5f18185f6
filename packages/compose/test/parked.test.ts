import { describe, expect, it } from "vitest";
import { ParkedWaiters } from "../src/index";

describe("ParkedWaiters", () => {
  it("wakes each waiter of a key once, and only that key's", () => {
    const parked = new ParkedWaiters<string>();
    const woken: string[] = [];
    parked.park("a", () => woken.push("a1"));
    parked.park("a", () => woken.push("a2"));
    parked.park("b", () => woken.push("b1"));
    expect(parked.stats()).toEqual({ keys: 2, waiters: 3 });
    parked.wake("a");
    expect(woken).toEqual(["a1", "a2"]);
    parked.wake("a");
    expect(woken).toEqual(["a1", "a2"]);
    expect(parked.stats()).toEqual({ keys: 1, waiters: 1 });
  });

  it("forgets a waiter that gave up, and the key with its last waiter", () => {
    const parked = new ParkedWaiters<number>();
    let calls = 0;
    const waiter = () => {
      calls += 1;
    };
    parked.park(1, waiter);
    parked.unpark(1, waiter);
    parked.unpark(1, waiter);
    parked.unpark(2, waiter);
    expect(parked.stats()).toEqual({ keys: 0, waiters: 0 });
    parked.wake(1);
    expect(calls).toBe(0);
  });

  it("keeps a waiter that parks again while woken for the next wake, not this one", () => {
    const parked = new ParkedWaiters<string>();
    let calls = 0;
    const again = () => {
      calls += 1;
      parked.park("k", again);
    };
    parked.park("k", again);
    parked.wake("k");
    expect(calls).toBe(1);
    expect(parked.stats()).toEqual({ keys: 1, waiters: 1 });
    parked.wake("k");
    expect(calls).toBe(2);
  });
});
