import { thrownCodeSync } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { Inspector, isInspectError } from "../src/index";
import { inspectedParts } from "../src/parts";
import { inFixture } from "./helpers";

const codeOf = (fn: () => unknown) => thrownCodeSync(fn, isInspectError);

describe("new Inspector(ctx, { parts })", () => {
  it("recognizes the parts it is given and refuses anything else", async () => {
    await inFixture(async ({ streams, chat, tasks }, state) => {
      expect(new Inspector(state, { parts: [chat, streams] }).parts).toEqual(["streams", "chat"]);
      expect(new Inspector(state, { parts: [chat, tasks, streams] }).parts).toEqual([
        "tasks",
        "streams",
        "chat",
      ]);
      expect(codeOf(() => new Inspector(state, { parts: [tasks, tasks] }))).toBe(
        "inspect/invalid-argument",
      );
      expect(new Inspector(state, { parts: [streams] }).parts).toEqual(["streams"]);
      expect(codeOf(() => new Inspector(undefined as never, { parts: [] }))).toBe(
        "inspect/invalid-argument",
      );
      expect(codeOf(() => new Inspector(state, undefined as never))).toBe(
        "inspect/invalid-argument",
      );
      expect(codeOf(() => new Inspector(state, { parts: {} as never }))).toBe(
        "inspect/invalid-argument",
      );
      expect(codeOf(() => new Inspector(state, { parts: [{ list() {} }] }))).toBe(
        "inspect/invalid-argument",
      );
      expect(codeOf(() => new Inspector(state, { parts: [streams, streams] }))).toBe(
        "inspect/invalid-argument",
      );
    });
  });

  it("answers a view of a part it was not given with inspect/not-found", async () => {
    await inFixture(async ({ streams, chat }, state) => {
      const inspector = new Inspector(state, { parts: [streams] });
      expect(codeOf(() => inspector.chatTurns("c1"))).toBe("inspect/not-found");
      expect(codeOf(() => inspector.runs())).toBe("inspect/not-found");
      expect(codeOf(() => inspector.execution("e1"))).toBe("inspect/not-found");
      expect(codeOf(() => inspector.run("r1"))).toBe("inspect/not-found");
      expect(inspector.overview().runs).toBeUndefined();
      expect(inspector.overview().parts).toEqual(["streams"]);
      const chatOnly = new Inspector(state, { parts: [chat] });
      expect(codeOf(() => chatOnly.streams())).toBe("inspect/not-found");
      expect(chatOnly.overview().streams).toBeUndefined();
    });
  });

  it("refuses a state the part does not have, checked by the part that owns the states", async () => {
    await inFixture(async ({ tasks, executor }, state) => {
      const inspector = new Inspector(state, { parts: [tasks, executor] });
      expect(codeOf(() => inspector.runs({ state: "sleeping" as never }))).toBe(
        "inspect/invalid-argument",
      );
      expect(codeOf(() => inspector.runs({ state: 7 as never }))).toBe("inspect/invalid-argument");
      expect(codeOf(() => inspector.executions({ state: ["running", "dozing"] as never }))).toBe(
        "inspect/invalid-argument",
      );
      expect(inspector.runs({ state: ["paused", "completed"] }).items).toEqual([]);
      expect(inspector.executions({ state: "interrupted" }).items).toEqual([]);
    });
  });

  it("keeps only the read methods of each part: no write is reachable from the inspector", async () => {
    await inFixture(async ({ streams, chat, tasks, executor }) => {
      const held = inspectedParts([streams, chat, tasks, executor]);
      expect(Object.keys(held.programs ?? {}).sort()).toEqual(["calls", "get", "list"]);
      expect(Object.keys(held.tasks ?? {}).sort()).toEqual([
        "children",
        "countByState",
        "history",
        "journals",
        "list",
        "restarts",
        // Waits on a run's event stream (tasks.events reads): no write of Tasks behind it.
        "runChanged",
        // Reads each schedule's row: no write of Tasks behind it.
        "schedules",
      ]);
      expect(Object.isFrozen(held.tasks)).toBe(true);
      expect(Object.keys(held.streams ?? {}).sort()).toEqual(["list", "readPage", "status"]);
      expect(Object.keys(held.chat ?? {}).sort()).toEqual(["getTurn", "listTurns", "storedChunks"]);
      expect(Object.isFrozen(held.streams)).toBe(true);
      // The views answer as the parts do.
      streams.open("s").append({ a: 1 });
      expect(held.streams?.status("s")).toEqual(streams.status("s"));
    });
  });
});
