import { describe, expect, it, vi } from "vitest";
import {
  ComposeError,
  createEmitter,
  DurableKitError,
  isDurableKitError,
  isErrorOf,
  isWellFormedName,
} from "../src/index";

class DemoError extends DurableKitError<"demo/invalid-argument" | "demo/storage"> {
  constructor(code: "demo/invalid-argument" | "demo/storage") {
    super(code, "demo", { retryable: code === "demo/storage", cause: "why" });
    this.name = "DemoError";
  }
}

describe("errors", () => {
  it("keeps code, retryable and cause, and matches by base and code", () => {
    const error = new DemoError("demo/storage");
    expect(error).toMatchObject({ code: "demo/storage", retryable: true, cause: "why" });
    expect(isErrorOf(DemoError, error)).toBe(true);
    expect(isErrorOf(DemoError, error, "demo/invalid-argument")).toBe(false);
    expect(isDurableKitError(error, "demo/storage")).toBe(true);
    expect(isErrorOf(DemoError, new ComposeError("compose/invalid-argument", "x"))).toBe(false);
    expect(isDurableKitError(new Error("plain"))).toBe(false);
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
