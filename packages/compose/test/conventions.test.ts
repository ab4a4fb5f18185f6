import { describe, expect, it, vi } from "vitest";
import {
  ComposeError,
  createEmitter,
  createOptionChecks,
  DurableKitError,
  errorGuard,
  isDurableKitError,
  isWellFormedName,
} from "../src/index";

type DemoErrorCode = "demo/invalid-argument" | "demo/storage";

class DemoError extends DurableKitError<DemoErrorCode> {
  static override readonly retryableCodes: readonly DemoErrorCode[] = ["demo/storage"];
  override readonly name: string = "DemoError";
}

class DemoArgumentError extends DemoError {
  override readonly name: string = "DemoArgumentError";
  constructor(message: string) {
    super("demo/invalid-argument", message);
  }
}

const isDemoError = errorGuard(DemoError);

describe("errors", () => {
  it("keeps code, retryable and cause, and matches by base and code", () => {
    const error = new DemoError("demo/storage", "demo", { cause: "why" });
    expect(error).toMatchObject({ code: "demo/storage", retryable: true, cause: "why" });
    expect(error.name).toBe("DemoError");
    expect(Object.keys(error)).toEqual(expect.arrayContaining(["code", "retryable", "name"]));
    expect(isDemoError(error)).toBe(true);
    expect(isDemoError(error, "demo/invalid-argument")).toBe(false);
    expect(isDurableKitError(error, "demo/storage")).toBe(true);
    expect(isDemoError(new ComposeError("compose/invalid-argument", "x"))).toBe(false);
    expect(isDurableKitError(new Error("plain"))).toBe(false);
  });

  it("derives retryable from the class's codes, inherited by subclasses, and keeps each name", () => {
    const argument = new DemoArgumentError("bad");
    expect(argument).toMatchObject({ code: "demo/invalid-argument", retryable: false });
    expect(argument.name).toBe("DemoArgumentError");
    expect(isDemoError(argument, "demo/invalid-argument")).toBe(true);
    expect("cause" in argument).toBe(false);
    const timeout = new ComposeError("compose/part-timeout", "slow");
    expect(timeout.retryable).toBe(true);
    expect(new ComposeError("compose/conflict", "twice").retryable).toBe(false);
    expect(String(timeout)).toBe("ComposeError: slow");
  });
});

describe("createEmitter", () => {
  it("delivers events and reports a throwing listener without throwing", () => {
    const seen: number[] = [];
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    const emit = createEmitter<number>("@durablekit/demo", (event) => {
      seen.push(event);
      if (event === 2) throw new Error("listener bug");
    });
    emit(1);
    expect(() => emit(2)).not.toThrow();
    emit(3);
    expect(seen).toEqual([1, 2, 3]);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toContain("@durablekit/demo");
    warn.mockRestore();
  });
});

describe("isWellFormedName", () => {
  it("refuses empty, too long, non-string and lone-surrogate names", () => {
    expect(isWellFormedName("run-1", 256)).toBe(true);
    expect(isWellFormedName("emoji 😀", 256)).toBe(true);
    expect(isWellFormedName("", 256)).toBe(false);
    expect(isWellFormedName("x".repeat(257), 256)).toBe(false);
    expect(isWellFormedName(42, 256)).toBe(false);
    expect(isWellFormedName("a\uD800b", 256)).toBe(false);
    expect(isWellFormedName("\uDC00", 256)).toBe(false);
    expect(isWellFormedName("end\uD83D", 256)).toBe(false);
  });
});

describe("createOptionChecks", () => {
  const check = createOptionChecks((message) => new DemoError("demo/invalid-argument", message));
  const refuses = (run: () => unknown, words: string) => {
    let thrown: unknown;
    try {
      run();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DemoError);
    expect(thrown).toMatchObject({ code: "demo/invalid-argument" });
    expect((thrown as Error).message).toContain(words);
  };

  it("refuses a ctx that is not a SQLite-backed object's state, showing the call", () => {
    for (const bad of [undefined, null, 42, {}, { storage: {} }, { storage: { sql: {} } }]) {
      refuses(
        () => check.ctx(bad, "new Demo(ctx)"),
        "new Demo(ctx) takes the Durable Object's state",
      );
    }
    const ctx = { storage: { sql: { exec: () => {} } } };
    expect(check.ctx(ctx, "new Demo(ctx)")).toBe(ctx);
  });

  it("answers an absent options bag with {} and refuses one that is not an object", () => {
    expect(check.options(undefined, "Demo options")).toEqual({});
    for (const bad of [null, 42, "x", [1]]) {
      refuses(
        () => check.options(bad as never, "Demo options"),
        "Demo options must be an options object",
      );
    }
  });

  it("checks callbacks, durations, counts, flags and words, answering the default when absent", () => {
    expect(check.callback(undefined, "now")).toBeUndefined();
    refuses(() => check.callback(42 as never, "now"), "now must be a function; got 42");
    expect(check.ms(undefined, "waitMs", 7)).toBe(7);
    expect(check.ms(12.9, "waitMs", 7)).toBe(12);
    refuses(() => check.ms(-1, "waitMs", 7), "waitMs must be a duration of at least 0");
    refuses(() => check.ms(Number.NaN, "waitMs", 7), "waitMs must be a number of milliseconds");
    refuses(() => check.ms("5", "waitMs", 7), 'got "5"');
    refuses(() => check.ms(0, "waitMs", 7, { min: 1 }), "at least 1");
    refuses(() => check.ms(11, "waitMs", 7, { max: 10 }), "at most 10; got 11");
    expect(check.count(undefined, "maxThings", 3)).toBe(3);
    refuses(() => check.count(0, "maxThings", 3), "maxThings must be an integer of at least 1");
    refuses(() => check.count(1.5, "maxThings", 3), "maxThings must be an integer; got 1.5");
    expect(check.flag(undefined, "keep", true)).toBe(true);
    refuses(() => check.flag("yes", "keep", true), 'keep must be true or false; got "yes"');
    expect(check.oneOf(undefined, "mode", ["a", "b"], "a")).toBe("a");
    expect(check.oneOf("b", "mode", ["a", "b"], "a")).toBe("b");
    refuses(() => check.oneOf("c", "mode", ["a", "b"], "a"), 'mode must be "a" or "b"; got "c"');
  });
});
