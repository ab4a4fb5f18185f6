import { type JournalErrorRecord, toErrorRecord } from "@durablekit/handle-journal";
import { thrownCode } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import {
  type BridgeStub,
  bytesWeight,
  IsolateRuntime,
  requestTooLarge,
  toRecord,
} from "../src/isolate/runtime";
import {
  type Answer,
  type ArgsKind,
  type BatchedCall,
  type BatchReply,
  failure,
  HALT,
  MAX_BATCH_CALLS,
  MAX_BATCH_WEIGHT,
  MAX_DEPTH,
  plain,
  TAG,
  tagged,
  WIRE_VERSION,
} from "../src/shared/wire";

/** A host endpoint that records what the isolate sends and answers with `answer`. */
class RecordingHost implements BridgeStub {
  readonly requests: { args: unknown[]; kind: ArgsKind }[] = [];
  others = 0;
  constructor(readonly reply: () => Answer = () => plain(1)) {}
  invoke(_id: number, _method: string, args: unknown[], kind: ArgsKind): Promise<Answer> {
    this.requests.push({ args, kind });
    this.log.push("invoke");
    return Promise.resolve(this.reply());
  }
  /** What reached the host, in order: `"invoke"`, `"batch:<calls>"`, `"dispose"`, … */
  readonly log: string[] = [];
  readonly batches: number[] = [];
  invokeBatch(calls: BatchedCall[]): Promise<BatchReply> {
    this.batches.push(calls.length);
    this.log.push(`batch:${calls.length}`);
    for (const [, , args, kind] of calls) this.requests.push({ args, kind });
    return Promise.resolve({
      answers: calls.map(() => this.reply()),
      tickets: calls.map(() => 0),
    });
  }
  answer(): Promise<Answer> {
    return Promise.reject(new Error("no call is answered by ticket here"));
  }
  dispose(): Promise<void> {
    this.others++;
    this.log.push("dispose");
    return Promise.resolve();
  }
  abort(): Promise<void> {
    this.others++;
    this.log.push("abort");
    return Promise.resolve();
  }
  streamEnd(): Promise<JournalErrorRecord | null> {
    this.others++;
    return Promise.resolve(null);
  }
}

function attached(host: RecordingHost, maxRequestBytes = 1 << 20): IsolateRuntime {
  const runtime = new IsolateRuntime();
  runtime.attach(host, { maxRequestBytes });
  return runtime;
}

const isCoded = (e: unknown): e is { code: string } =>
  typeof (e as { code?: unknown })?.code === "string";

function nested(depth: number, leaf: unknown): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

describe("isolate runtime: error records", () => {
  it("builds the same records as handle-journal's toErrorRecord", () => {
    const error = Object.assign(new RangeError("bad"), {
      code: "E_BAD",
      zero: -0,
      deep: { a: [1] },
    });
    expect(toRecord(error)).toEqual(toErrorRecord(error));
    expect(toRecord(error).$error.zero).toBe(0);
    expect(Object.is(toRecord(error).$error.zero, -0)).toBe(false);
  });

  it("drops cyclic props instead of recursing", () => {
    const inner: Record<string, unknown> = { n: 1 };
    inner.self = inner;
    const record = toRecord(Object.assign(new Error("cyclic"), { inner }));
    expect(record.$error.inner).toEqual({ n: 1 });
  });

  it("replaces a thrown value whose traps throw with a fallback record", () => {
    const hostile = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error("trap");
        },
        getPrototypeOf() {
          throw new Error("trap");
        },
        get() {
          throw new Error("trap");
        },
      },
    );
    expect(toRecord(hostile).$error.message).toMatch(/could not be read/);
  });

  it("rethrows an error answer as the error its record describes", async () => {
    const host = new RecordingHost(() =>
      failure({ $error: { name: "TypeError", message: "nope", code: "E_NOPE" } }),
    );
    const error = await attached(host)
      .call(1, "m", [])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({ message: "nope", code: "E_NOPE" });
  });
});

describe("isolate runtime: size bound", () => {
  it("weighs bytes as their base64 length", () => {
    expect(bytesWeight(3)).toBe(4);
    expect(bytesWeight(300)).toBe(400);
  });

  it("refuses arguments over maxRequestBytes before invoking the host", async () => {
    const host = new RecordingHost();
    const runtime = attached(host, 10);
    const isBridge = (e: unknown): e is { code: string } => isCoded(e);
    expect(await thrownCode(() => runtime.call(1, "m", ["x".repeat(11)]), isBridge)).toBe(
      "bridge/too-large",
    );
    expect(await thrownCode(() => runtime.call(1, "m", [{ s: "x".repeat(11) }]), isBridge)).toBe(
      "bridge/too-large",
    );
    expect(host.requests).toHaveLength(0);
    expect(requestTooLarge(10)).toMatchObject({
      name: "BridgeError",
      path: "args",
      limit: "maxRequestBytes",
    });
  });

  it("sends a view as its own bytes only", async () => {
    const host = new RecordingHost();
    const view = new Uint8Array(new ArrayBuffer(1 << 20), 8, 4);
    await attached(host, 100).call(1, "m", [view]);
    const sent = host.requests[0]?.args[0] as Uint8Array;
    expect(sent.byteLength).toBe(4);
    expect(sent.buffer.byteLength).toBe(4);
  });
});

describe("isolate runtime: wire and depth", () => {
  it("sends one invoke per call and nothing else", async () => {
    const host = new RecordingHost();
    const runtime = attached(host);
    expect(await runtime.call(1, "m", [1, "a"])).toBe(1);
    expect(await runtime.call(1, "m", [{ a: [1, 2] }])).toBe(1);
    expect(host.requests).toEqual([
      { kind: "plain", args: [1, "a"] },
      { kind: "plain", args: [{ a: [1, 2] }] },
    ]);
    expect(host.others).toBe(0);
    expect(WIRE_VERSION).toBe(5);
  });

  it("sends arguments holding a signal or callback as a tagged request", async () => {
    const host = new RecordingHost();
    const runtime = attached(host);
    await runtime.call(1, "m", [new AbortController().signal]);
    await runtime.call(1, "m", [{ cb: () => 1 }]);
    expect(host.requests.map((r) => r.kind)).toEqual(["tagged", "tagged"]);
    expect(host.requests[0]?.args[0]).toMatchObject({ [TAG]: "s", aborted: false });
  });

  it("walks arguments to the shared depth limit and no further", async () => {
    const host = new RecordingHost();
    const runtime = attached(host);
    await runtime.call(1, "m", [nested(MAX_DEPTH - 1, () => 1)]);
    await runtime.call(1, "m", [nested(MAX_DEPTH + 1, () => 1)]);
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    await runtime.call(1, "m", [cyclic]);
    expect(host.requests.map((r) => r.kind)).toEqual(["tagged", "plain", "plain"]);
  });

  it("revives tagged answers to the shared depth limit and no further", async () => {
    const record = { [TAG]: "u", href: "https://example.com/" };
    const host = new RecordingHost(() =>
      tagged([nested(MAX_DEPTH - 1, record), nested(MAX_DEPTH + 1, record)]),
    );
    const [shallow, deep] = (await attached(host).call(1, "m", [])) as unknown[];
    let v: unknown = shallow;
    for (let i = 0; i < MAX_DEPTH - 1; i++) v = (v as unknown[])[0];
    expect(v).toBeInstanceOf(URL);
    v = deep;
    for (let i = 0; i < MAX_DEPTH + 1; i++) v = (v as unknown[])[0];
    expect(v).toEqual(record);
  });

  it("never settles a call answered halt, nor any later call", async () => {
    const host = new RecordingHost(() => HALT);
    const runtime = attached(host);
    const settled = [false, false];
    runtime.call(1, "m", []).then(
      () => (settled[0] = true),
      () => (settled[0] = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    runtime.call(1, "m", []).then(
      () => (settled[1] = true),
      () => (settled[1] = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toEqual([false, false]);
    expect(host.requests).toHaveLength(1);
  });
});

describe("isolate runtime: call batches", () => {
  it("sends the calls of one synchronous stretch with primitive arguments as one batch, in call order", async () => {
    const host = new RecordingHost();
    const runtime = attached(host);
    const answers = await Promise.all([
      runtime.call(1, "m", [1]),
      runtime.call(1, "m", ["two"]),
      runtime.call(1, "m", [3n, true, null, undefined]),
    ]);
    expect(answers).toEqual([1, 1, 1]);
    expect(host.log).toEqual(["batch:3"]);
    expect(host.requests.map((r) => r.args[0])).toEqual([1, "two", 3n]);
    // One call alone goes as a plain invoke.
    await runtime.call(1, "m", [4]);
    expect(host.log).toEqual(["batch:3", "invoke"]);
  });

  it("sends the waiting batch before a call with objects or a symbol, so the host sees program order", async () => {
    const host = new RecordingHost();
    const runtime = attached(host);
    const symbol = Symbol("s");
    await Promise.allSettled([
      runtime.call(1, "m", [1]),
      runtime.call(1, "m", [2]),
      runtime.call(1, "m", [{ three: 3 }]),
      runtime.call(1, "m", [4]),
      runtime.call(1, "m", [symbol]),
      runtime.call(1, "m", [6]),
    ]);
    expect(host.log).toEqual(["batch:2", "invoke", "invoke", "invoke", "invoke"]);
    expect(host.requests.map((r) => r.args[0])).toEqual([1, 2, { three: 3 }, 4, symbol, 6]);
  });

  it("keeps a batch within MAX_BATCH_CALLS calls and MAX_BATCH_WEIGHT characters", async () => {
    const host = new RecordingHost();
    const runtime = attached(host, Number.POSITIVE_INFINITY);
    await Promise.all(
      Array.from({ length: 2 * MAX_BATCH_CALLS + 3 }, (_, i) => runtime.call(1, "m", [i])),
    );
    expect(host.batches).toEqual([MAX_BATCH_CALLS, MAX_BATCH_CALLS, 3]);
    const third = "x".repeat(Math.floor(MAX_BATCH_WEIGHT / 3) + 1);
    await Promise.all([0, 1, 2, 3].map(() => runtime.call(1, "m", [third])));
    expect(host.batches.slice(3)).toEqual([2, 2]);
  });
});
