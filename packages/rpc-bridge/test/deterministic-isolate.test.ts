import { thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { type BridgeError, isBridgeError } from "../src/errors";
import { SeededRandom } from "../src/isolate/seeded-random";
import { buildSchedule } from "../src/replay/replay-schedule";
import { evaluate, FakeBridge, returned } from "./fixtures/deterministic-bridge";

const SEED_A = "a".repeat(64);
const SEED_B = "0123456789abcdef".repeat(4);
// 2001-09-09: a year no real clock reads now.
const STARTED = 1_000_000_000_000;

function replayOf(schedule: number[], seed = SEED_A, startedAt = STARTED) {
  return { seed, startedAt, schedule };
}

const RANDOM_PROGRAM = `
  export default async function () {
    return {
      random: [Math.random(), Math.random(), Math.random()],
      bytes: Array.from(crypto.getRandomValues(new Uint8Array(8))),
      words: Array.from(crypto.getRandomValues(new Int32Array(2))),
      big: Array.from(crypto.getRandomValues(new BigUint64Array(1)), String),
      uuid: crypto.randomUUID(),
      borrowed: Crypto.prototype.randomUUID.call(crypto),
      float: (() => { try { crypto.getRandomValues(new Float64Array(1)); } catch (e) { return e.name; } })(),
    };
  }`;

describe("deterministic isolate: randomness", () => {
  it("draws the RFC 8439 ChaCha20 keystream from the seed", () => {
    const bytes = new Uint8Array(128);
    new SeededRandom("0".repeat(64)).fill(bytes);
    expect(Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")).toBe(
      "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586" +
        "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f",
    );
  });

  it("refuses a seed that is not 64 hexadecimal characters", () => {
    expect(() => new SeededRandom("xyz")).toThrow(TypeError);
    expect(() => new SeededRandom("a".repeat(63))).toThrow(TypeError);
  });

  it("gives Math.random, getRandomValues and randomUUID the same values for the same seed and others for another seed", async () => {
    const first = returned(await evaluate(RANDOM_PROGRAM, new FakeBridge(), replayOf([])));
    const again = returned(await evaluate(RANDOM_PROGRAM, new FakeBridge(), replayOf([])));
    const other = returned(await evaluate(RANDOM_PROGRAM, new FakeBridge(), replayOf([], SEED_B)));
    expect(again).toEqual(first);
    const a = first as Record<string, unknown>;
    const b = other as Record<string, unknown>;
    for (const key of ["random", "bytes", "words", "big", "uuid", "borrowed"]) {
      expect(b[key]).not.toEqual(a[key]);
    }
    for (const r of a.random as number[]) expect(r >= 0 && r < 1).toBe(true);
    expect(a.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.borrowed).not.toBe(a.uuid);
    expect(a.float).toBe("TypeMismatchError");
  });
});

describe("deterministic isolate: clock", () => {
  it("reads Date and performance.now from the virtual clock, which stands still between deliveries and advances to each answer's recorded time", async () => {
    const program = `
      import { a, b } from "./m.js";
      export default async function () {
        const before = { now: Date.now(), date: new Date().getTime(), perf: performance.now(), text: Date() };
        let spin = 0;
        for (let i = 0; i < 1e6; i++) spin += i;
        const still = Date.now();
        await a();
        const afterA = { now: Date.now(), perf: performance.now() };
        await b();
        return {
          before, still, afterA, afterB: Date.now(), origin: performance.timeOrigin,
          fixed: new Date(5).getTime(), isDate: new Date() instanceof Date,
          viaConstructor: new (new Date(0).constructor)().getTime(), spin: spin > 0,
          intl: new Intl.DateTimeFormat("en", { year: "numeric", timeZone: "UTC" }).format(),
          intlParts: new Intl.DateTimeFormat("en", { year: "numeric", timeZone: "UTC" }).formatToParts()[0].value,
          hrtime: process.hrtime(), uptime: process.uptime(),
        };
      }`;
    const bridge = new FakeBridge((method) => ({
      at: method === "a" ? STARTED + 5000 : STARTED + 1000,
    }));
    const value = returned(await evaluate(program, bridge, replayOf([]), ["nodejs_compat"]));
    const year = String(new Date(STARTED + 5000).getUTCFullYear());
    expect(value).toEqual({
      before: {
        now: STARTED,
        date: STARTED,
        perf: 0,
        text: new Date(STARTED).toString(),
      },
      still: STARTED,
      afterA: { now: STARTED + 5000, perf: 5000 },
      // The clock never goes back: b's answer was recorded earlier than a's.
      afterB: STARTED + 5000,
      origin: STARTED,
      fixed: 5,
      isDate: true,
      viaConstructor: STARTED + 5000,
      spin: true,
      intl: year,
      intlParts: year,
      hrtime: [5, 0],
      uptime: 5,
    });
  });
});

describe("deterministic isolate: timers", () => {
  it("fires a 10 s setTimeout in replay by its schedule without waiting real time", async () => {
    const program = `
      export default async function () {
        const fired = [];
        setTimeout(() => fired.push("first"), 10_000);
        await new Promise((resolve) => setTimeout(resolve, 10_000));
        return { fired, now: Date.now() };
      }`;
    const started = Date.now();
    const value = returned(await evaluate(program, new FakeBridge(), replayOf([-1, -2])));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(value).toEqual({ fired: ["first"], now: STARTED + 10_000 });
  });

  it("replays setInterval, clearInterval, setImmediate, scheduler.wait and AbortSignal.timeout in their recorded order", async () => {
    const program = `
      import { done } from "./m.js";
      export default async function () {
        const order = [];
        let ticks = 0;
        const interval = setInterval(() => {
          order.push("tick" + ++ticks + "@" + (Date.now() - performance.timeOrigin));
          if (ticks === 3) clearInterval(interval);
        }, 5);
        setImmediate(() => order.push("immediate@" + performance.now()));
        const signal = AbortSignal.timeout(50);
        signal.addEventListener("abort", () => order.push("abort:" + signal.reason.name));
        await scheduler.wait(100);
        order.push("waited@" + performance.now());
        const cleared = setTimeout(() => order.push("never"), 1);
        clearTimeout(cleared);
        await done();
        return order;
      }`;
    // setImmediate is there under nodejs_compat.
    const flags = ["nodejs_compat"];
    const live = new FakeBridge();
    const recorded = returned(await evaluate(program, live, replayOf([]), flags));
    expect(recorded).toContain("waited@100");
    expect(recorded).toContain("immediate@0");
    expect(recorded).not.toContain("never");
    const schedule = buildSchedule(live.windows());
    expect(schedule.filter((e) => e === -1)).toHaveLength(3);

    const started = Date.now();
    const replayed = returned(await evaluate(program, new FakeBridge(), replayOf(schedule), flags));
    expect(replayed).toEqual(recorded);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe("deterministic isolate: timer edge cases", () => {
  it("ends the attempt as timer-error when a virtual timer's callback throws", async () => {
    const program = `
      export default async function () {
        setTimeout(() => { throw Object.assign(new Error("tick failed"), { code: "E_TICK" }); }, 5);
        await new Promise((resolve) => setTimeout(resolve, 10));
        return "returned";
      }`;
    for (const schedule of [[], [-1, -2]]) {
      const outcome = await evaluate(program, new FakeBridge(), replayOf(schedule));
      expect(outcome).toMatchObject({
        kind: "timer-error",
        record: { $error: { message: "tick failed", code: "E_TICK" } },
      });
    }
  });

  it("fires a timer set during the replay when it was due by the wall clock once the run is live again", async () => {
    const program = `
      import { a } from "./m.js";
      export default async function () {
        const slept = new Promise((resolve) => setTimeout(resolve, 10_000));
        await a();
        await slept;
        return Date.now() - performance.timeOrigin;
      }`;
    // The run started 10 s ago; its one recorded answer came 100 ms in. The timer is due now.
    const startedAt = Date.now() - 10_000;
    const bridge = new FakeBridge(() => ({ at: startedAt + 100 }));
    const started = Date.now();
    const value = returned(await evaluate(program, bridge, replayOf([1], SEED_A, startedAt)));
    expect(Date.now() - started).toBeLessThan(2000);
    expect(value).toBe(10_000);
  });

  it("never fires a timer that another timer due at the same time cleared", async () => {
    const program = `
      export default async function () {
        let fired = false;
        setTimeout(() => clearTimeout(second), 1);
        const second = setTimeout(() => { fired = true; }, 1);
        await new Promise((resolve) => setTimeout(resolve, 30));
        return fired;
      }`;
    expect(returned(await evaluate(program, new FakeBridge(), replayOf([])))).toBe(false);
  });
});

describe("deterministic isolate: delivery order", () => {
  const RACE = `
    import { slow, fast, done } from "./m.js";
    export default async function () {
      const winner = await Promise.race([slow(), fast()]);
      await done(winner);
      return winner;
    }`;

  it("resolves a Promise.race over two calls to the recorded winner when the answers arrive in the opposite order on replay", async () => {
    const live = new FakeBridge((method) => ({
      value: method,
      delayMs: method === "slow" ? 60 : method === "fast" ? 5 : 0,
    }));
    expect(returned(await evaluate(RACE, live, replayOf([])))).toBe("fast");
    // fast (seq 2) was delivered before `done` was issued; slow (seq 1) after.
    expect(live.seen.map((c) => c.events)).toEqual([
      { from: 0, list: [] },
      { from: 0, list: [] },
      { from: 0, list: [2] },
    ]);
    const schedule = buildSchedule(live.windows());
    expect(schedule).toEqual([2]);

    const opposite = (method: string) => ({
      value: method,
      delayMs: method === "fast" ? 60 : 0,
    });
    // Without the recorded order the other answer wins: the test would see a change.
    expect(returned(await evaluate(RACE, new FakeBridge(opposite), replayOf([])))).toBe("slow");
    const replay = new FakeBridge(opposite);
    expect(returned(await evaluate(RACE, replay, replayOf(schedule)))).toBe("fast");
    expect(replay.seen[2]?.events).toEqual({ from: 0, list: [2] });
  });

  it("sends each call the event log since the latest answered call was issued", async () => {
    const program = `
      import { a, b, done } from "./m.js";
      export default async function () {
        await a();
        await new Promise((resolve) => setTimeout(resolve, 1));
        await b();
        await done();
        return 1;
      }`;
    const bridge = new FakeBridge();
    returned(await evaluate(program, bridge, replayOf([])));
    expect(bridge.seen.map((c) => c.events)).toEqual([
      { from: 0, list: [] },
      { from: 0, list: [1, -1] },
      { from: 2, list: [2] },
    ]);
  });

  it("hands the program one answer per macrotask, so two answers' continuations never interleave", async () => {
    const program = `
      import { a, b } from "./m.js";
      export default async function () {
        const seen = [];
        const chain = (name) => async () => {
          for (let i = 0; i < 1000; i++) { seen.push(name); await null; }
        };
        await Promise.all([a().then(chain("a")), b().then(chain("b"))]);
        return seen.join("");
      }`;
    for (const replay of [replayOf([]), replayOf([2, 1])]) {
      const value = returned(await evaluate(program, new FakeBridge(), replay));
      expect(["a".repeat(1000) + "b".repeat(1000), "b".repeat(1000) + "a".repeat(1000)]).toContain(
        value,
      );
    }
  });

  it("delivers an answer that is not journaled at once and leaves it out of the log", async () => {
    const program = `
      import { a, b, done } from "./m.js";
      export default async function () {
        let refused = null;
        try { await a(); } catch (e) { refused = e.code; }
        await b();
        await done();
        return refused;
      }`;
    const bridge = new FakeBridge((method) =>
      method === "a"
        ? {
            unjournaled: true,
            error: { name: "BridgeError", message: "no", code: "bridge/limit-calls" },
          }
        : {},
    );
    expect(returned(await evaluate(program, bridge, replayOf([])))).toBe("bridge/limit-calls");
    // a's refusal is not in the log and does not move the acknowledged point.
    expect(bridge.seen[2]?.events).toEqual({ from: 0, list: [2] });
  });

  it("ends the attempt as diverged when the next scheduled event cannot happen", async () => {
    const program = `
      import { a } from "./m.js";
      export default async function () { await a(); return 1; }`;
    const outcome = await evaluate(program, new FakeBridge(), replayOf([7]));
    expect(outcome.kind).toBe("diverged");
    const record = (outcome as { record: { $error: { code: string; message: string } } }).record;
    expect(record.$error.code).toBe("bridge/diverged");
    expect(record.$error.message).toMatch(/journal entry 7/);
  });

  it("ends the attempt as diverged when the program returns with recorded events left", async () => {
    const program = `
      import { a } from "./m.js";
      export default async function () { await a(); return 1; }`;
    const outcome = await evaluate(program, new FakeBridge(), replayOf([1, -1]));
    expect(outcome.kind).toBe("diverged");
    const record = (outcome as { record: { $error: { code: string; message: string } } }).record;
    expect(record.$error.code).toBe("bridge/diverged");
    expect(record.$error.message).toMatch(/returned before it received the firing of timer 1/);
  });
});

describe("deterministic isolate: Web Crypto and runs that are not replayed", () => {
  const CRYPTO = `
    export default async function () {
      const codeOf = (promise) => promise.then(() => "ran", (e) => e.code ?? e.name);
      const hmac = { name: "HMAC", hash: "SHA-256" };
      const key = await crypto.subtle.importKey("raw", new Uint8Array(32), hmac, false, ["sign"]);
      return {
        generate: await codeOf(crypto.subtle.generateKey(hmac, false, ["sign"])),
        borrowed: await codeOf(SubtleCrypto.prototype.generateKey.call(crypto.subtle, hmac, false, ["sign"])),
        ecdsa: await codeOf(crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key, new Uint8Array(1))),
        hmacSign: await codeOf(crypto.subtle.sign("HMAC", key, new Uint8Array(1))),
        digest: await codeOf(crypto.subtle.digest("SHA-256", new Uint8Array(1))),
        // Refused before the key is looked at: the algorithm alone makes the result random.
        rsaPss: await codeOf(crypto.subtle.sign({ name: "RSA-PSS", saltLength: 32 }, key, new Uint8Array(1))),
        rsaOaep: await codeOf(crypto.subtle.encrypt({ name: "RSA-OAEP" }, key, new Uint8Array(1))),
        wrapOaep: await codeOf(crypto.subtle.wrapKey("raw", key, key, { name: "RSA-OAEP" })),
        // RSA-PSS without salt is deterministic: it reaches Web Crypto (which refuses this HMAC key).
        rsaPssNoSalt: await crypto.subtle.sign({ name: "RSA-PSS", saltLength: 0 }, key, new Uint8Array(1))
          .then(() => "ran", (e) => (e.code === "bridge/replay-nondeterministic" ? e.code : "not refused")),
      };
    }`;

  it("refuses crypto.subtle.generateKey and randomized signing in a replay run with bridge/replay-nondeterministic", async () => {
    const value = returned(await evaluate(CRYPTO, new FakeBridge(), replayOf([])));
    expect(value).toEqual({
      generate: "bridge/replay-nondeterministic",
      borrowed: "bridge/replay-nondeterministic",
      ecdsa: "bridge/replay-nondeterministic",
      hmacSign: "ran",
      digest: "ran",
      rsaPss: "bridge/replay-nondeterministic",
      rsaOaep: "bridge/replay-nondeterministic",
      wrapOaep: "bridge/replay-nondeterministic",
      rsaPssNoSalt: "not refused",
    });
  });

  it("keeps the real Date, Math.random, timers and Web Crypto in a run that is not a replay run", async () => {
    const program = `
      import { a } from "./m.js";
      export default async function () {
        await a();
        const key = await crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
        return { now: Date.now(), random: Math.random(), key: key.type };
      }`;
    const before = Date.now();
    const bridge = new FakeBridge();
    const first = returned(await evaluate(program, bridge)) as Record<string, unknown>;
    const second = returned(await evaluate(program, new FakeBridge())) as Record<string, unknown>;
    expect(first.now).toBeGreaterThanOrEqual(before);
    expect(first.random).not.toBe(second.random);
    expect(first.key).toBe("secret");
    expect(bridge.seen[0]?.arity).toBe(4);
  });
});

describe("deterministic isolate: platform compatibility", () => {
  it("answers timer ids of the same kind as the platform's, with Node's timer methods under nodejs_compat", async () => {
    const program = `
      export default async function () {
        const kinds = [typeof setTimeout(() => {}, 1), typeof setInterval(() => {}, 1)];
        const timer = setTimeout(() => {}, 5).unref().ref();
        clearTimeout(timer);
        const fired = await new Promise((resolve) => {
          const t = setTimeout(() => resolve(Date.now() - performance.timeOrigin), 20);
          t.refresh();
        });
        return { kinds, fired, hasRef: timer.hasRef() };
      }`;
    const real = returned(await evaluate(program, new FakeBridge(), undefined, ["nodejs_compat"]));
    const virtual = returned(
      await evaluate(program, new FakeBridge(), replayOf([]), ["nodejs_compat"]),
    ) as Record<string, unknown>;
    expect(virtual.kinds).toEqual((real as Record<string, unknown>).kinds);
    expect(virtual).toMatchObject({ kinds: ["object", "object"], fired: 20, hasRef: true });
    const kinds = "export default () => [typeof setTimeout(() => {}, 1)]";
    expect(returned(await evaluate(kinds, new FakeBridge(), replayOf([])))).toEqual(
      returned(await evaluate(kinds, new FakeBridge())),
    );
  });
});

describe("buildSchedule", () => {
  const diverged = (e: unknown): e is BridgeError => isBridgeError(e, "bridge/diverged");

  it("merges overlapping windows that agree", () => {
    expect(
      buildSchedule([
        { from: 0, list: [1, -1] },
        { from: 1, list: [-1, 2, 3] },
        { from: 4, list: [] },
        { from: 2, list: [2] },
      ]),
    ).toEqual([1, -1, 2, 3]);
  });

  it("refuses windows that disagree about a position with bridge/diverged", () => {
    expect(
      thrownCodeSync(
        () =>
          buildSchedule([
            { from: 0, list: [1, 2] },
            { from: 1, list: [3] },
          ]),
        diverged,
      ),
    ).toBe("bridge/diverged");
  });

  it("keeps only the gap-free prefix from position 0", () => {
    expect(
      buildSchedule([
        { from: 0, list: [1] },
        { from: 3, list: [2, 3] },
      ]),
    ).toEqual([1]);
    expect(buildSchedule([{ from: 1, list: [1] }])).toEqual([]);
    expect(buildSchedule([])).toEqual([]);
  });

  it("refuses malformed windows and stays small whatever the offsets", () => {
    const bad = [
      { from: -1, list: [1] },
      { from: 0.5, list: [1] },
      { from: 0, list: "1" },
      { from: 0, list: [0] },
      { from: 0, list: [1.5] },
      { from: 0, list: ["1"] },
      null,
    ];
    for (const window of bad) {
      expect(thrownCodeSync(() => buildSchedule([window as never]), diverged)).toBe(
        "bridge/diverged",
      );
    }
    expect(
      buildSchedule([
        { from: 2 ** 52, list: [1] },
        { from: 0, list: [5] },
      ]),
    ).toEqual([5]);
  });
});
