import { JournalStore } from "@durablekit/handle-journal";
import { describe, expect, it } from "vitest";
import { JOURNAL_CALL_OVERHEAD } from "../src/replay/replay-calls";
import { freshReplay, inReplay, storedCounters } from "./helpers";

/**
 * Every built-in the isolate runtime touches (its own code and the handle-journal code bundled
 * into it), by path from `globalThis`. A program replaces one at a time, before its first call.
 */
const BUILT_INS = [
  ...[
    "slice",
    "push",
    "pop",
    "shift",
    "unshift",
    "splice",
    "map",
    "filter",
    "includes",
    "indexOf",
    "findIndex",
    "some",
    "every",
    "forEach",
    "join",
    "concat",
    "fill",
    "keys",
    "values",
    "entries",
    "@@iterator",
  ].map((m) => `Array.prototype.${m}`),
  ...["isArray", "from", "of"].map((m) => `Array.${m}`),
  ...[
    "keys",
    "values",
    "entries",
    "assign",
    "freeze",
    "defineProperty",
    "getOwnPropertyDescriptor",
    "getOwnPropertyNames",
    "getPrototypeOf",
    "hasOwn",
    "fromEntries",
    "create",
  ].map((m) => `Object.${m}`),
  ...["hasOwnProperty", "toString"].map((m) => `Object.prototype.${m}`),
  ...["then", "catch", "finally"].map((m) => `Promise.prototype.${m}`),
  ...["resolve", "reject", "all", "race", "allSettled"].map((m) => `Promise.${m}`),
  ...["stringify", "parse"].map((m) => `JSON.${m}`),
  ...[
    "get",
    "set",
    "has",
    "delete",
    "clear",
    "values",
    "keys",
    "entries",
    "forEach",
    "@@iterator",
  ].map((m) => `Map.prototype.${m}`),
  ...["add", "has", "delete", "values", "@@iterator"].map((m) => `Set.prototype.${m}`),
  ...["get", "set", "has", "delete"].map((m) => `WeakMap.prototype.${m}`),
  ...["for", "keyFor"].map((m) => `Symbol.${m}`),
  ...["toString"].map((m) => `Symbol.prototype.${m}`),
  ...["call", "apply", "bind", "toString"].map((m) => `Function.prototype.${m}`),
  ...["apply", "construct", "get", "defineProperty", "ownKeys"].map((m) => `Reflect.${m}`),
  ...[
    "structuredClone",
    "Promise",
    "Map",
    "Set",
    "WeakMap",
    "Symbol",
    "JSON",
    "Array",
    "Object",
  ].map((m) => `globalThis.${m}`),
];

/**
 * The program: replaces the built-in at `path` (`mode` "throws": the replacement throws;
 * "inflates": it answers what the original does, with every array answer padded by 100,000
 * entries of 1, a valid event number), then calls host functions (one failing), an object's
 * method, two calls at once (one batch) and a timer, is interrupted, and after the resume makes
 * five more calls.
 */
function program(path: string, mode: "throws" | "inflates"): string {
  return `
    import { createJob } from "codemode:jobs";
    import { approval, echo, fail } from "test:replay";
    const path = ${JSON.stringify(path)};
    const mode = ${JSON.stringify(mode)};
    const apply = Reflect.apply;
    const isArray = Array.isArray;
    const padding = new Array(100000).fill(1);
    const parts = path.split(".");
    const key = parts.pop();
    let owner = globalThis;
    for (const part of parts.slice(parts[0] === "globalThis" ? 1 : 0)) owner = owner[part];
    const name = key === "@@iterator" ? Symbol.iterator : key;
    const original = owner[name];
    const replacement =
      mode === "throws"
        ? function () { throw new Error("hostile " + path); }
        : function (...args) {
            const out = new.target ? Reflect.construct(original, args, new.target) : apply(original, this, args);
            return isArray(out) ? [...out, ...padding] : out;
          };
    export default async function () {
      Object.defineProperty(owner, name, { value: replacement, writable: true, configurable: true });
      let sum = 0;
      for (let i = 0; i < 5; i++) sum += await echo(i);
      try {
        await fail();
      } catch {
        sum += 100;
      }
      const job = await createJob({ name: "n" });
      sum += (await job.info()).name.length;
      sum += (await echo({ list: [1, 2] })).list.length;
      // Two calls started in one stretch: they cross as one batch.
      const twenty = echo(20);
      const twentyOne = echo(21);
      sum += (await twenty) + (await twentyOne) - 41;
      await scheduler.wait(1);
      await approval("go?");
      for (let i = 5; i < 10; i++) sum += await echo(i);
      return sum;
    }
  `;
}

const LIMITS = { maxTotalBytes: 65_536, maxCalls: 100 };

describe("hostile programs: a program replacing a built-in the isolate runtime uses", () => {
  for (const path of BUILT_INS) {
    for (const mode of ["throws", "inflates"] as const) {
      it(`keeps the journal within the limits, runs no call twice and ends coded or with its result when ${path} ${mode}`, async () => {
        const stub = freshReplay();
        const out = await inReplay(stub, async (i, state) => {
          const executor = i.create({ limits: LIMITS });
          const first = await executor.execute(program(path, mode), undefined, { id: "hostile" });
          const done =
            first.state === "interrupted"
              ? await i.create({ limits: LIMITS }).resume("hostile", true)
              : first;
          const entries = new JournalStore(state).entries("hostile");
          let chars = 0;
          for (const e of entries) {
            chars += (e.payload?.length ?? 0) + e.key.length + e.module.length;
            chars += e.method.length + e.argsDigest.length;
          }
          const echoes = entries.filter((e) => e.method === "echo" && e.outcome === "value");
          const after = await i.create().execute("export default () => 1;");
          return { done, chars, entries: entries.length, journaledEchoes: echoes.length, after };
        });
        const seen = JSON.stringify(out.done).slice(0, 600);
        expect(out.chars, seen).toBeLessThanOrEqual(
          LIMITS.maxTotalBytes + out.entries * JOURNAL_CALL_OVERHEAD,
        );
        expect(out.entries, seen).toBeLessThanOrEqual(2 * LIMITS.maxCalls);
        // Every echo that ran was journaled once: none ran twice.
        const counters = await storedCounters(stub);
        expect(counters.echoes ?? 0, seen).toBe(out.journaledEchoes);
        expect(out.after).toMatchObject({ state: "completed", result: 1 });
        if (out.done.state === "completed") expect(out.done.result, "the result").toBe(148);
        else expect(String(out.done.error?.code), seen).toMatch(/^bridge\//);
      });
    }
  }
});

/** The journal's size in characters (payloads and names) and its entries. */
function journalSize(state: DurableObjectState, id: string): { chars: number; entries: number } {
  let chars = 0;
  const entries = new JournalStore(state).entries(id);
  for (const e of entries) {
    chars += (e.payload?.length ?? 0) + e.key.length + e.module.length;
    chars += e.method.length + e.argsDigest.length;
  }
  return { chars, entries: entries.length };
}

describe("hostile programs: what the isolate sends is bounded by the host", () => {
  it("bounds the journal when the isolate sends an event window of 50,000 events with every call", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      i.loader.forgeWindow = () => ({ from: 0, list: new Array(50_000).fill(1) });
      const done = await i.create({ limits: LIMITS }).execute(
        `import { echo } from "test:replay";
         export default async function () {
           const codes = [];
           for (let i = 0; i < 10; i++) codes.push(await echo(i).then(() => "ok", (e) => e.code));
           return codes;
         }`,
        undefined,
        { id: "forged-window" },
      );
      return { done, ...journalSize(state, "forged-window") };
    });
    // One window (about 100,000 characters) is more than the run's 64 KiB: no call is keyed.
    expect(out.done).toMatchObject({
      state: "completed",
      result: new Array(10).fill("bridge/too-large"),
    });
    expect(out.chars).toBeLessThanOrEqual(
      LIMITS.maxTotalBytes + out.entries * JOURNAL_CALL_OVERHEAD,
    );
    expect(await storedCounters(stub)).not.toHaveProperty("echoes");
  });

  it("journals at most maxCalls refused calls of an attempt, then refuses calls without a key", async () => {
    const stub = freshReplay();
    const out = await inReplay(stub, async (i, state) => {
      const done = await i.create({ limits: LIMITS }).execute(
        `import { createJob } from "codemode:jobs";
         export default async function () {
           let refused = 0;
           for (let i = 0; i < 500; i++) {
             await createJob({ name: "n" }).catch(() => refused++);
           }
           return refused;
         }`,
        undefined,
        { id: "refusals", access: "read" },
      );
      return { done, ...journalSize(state, "refusals") };
    });
    expect(out.done).toMatchObject({ state: "completed", result: 500 });
    expect(out.entries).toBe(LIMITS.maxCalls);
    expect(out.chars).toBeLessThanOrEqual(
      LIMITS.maxTotalBytes + out.entries * JOURNAL_CALL_OVERHEAD,
    );
  });
});
