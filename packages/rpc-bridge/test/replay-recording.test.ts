import { describe, expect, it } from "vitest";
import { isBridgeError } from "../src/index";
import { freshReplay, inReplay, storedCounters } from "./helpers";

/** A program that echoes three values, draws a random number and reads the clock. */
const RECORDED = `import { echo } from "test:replay";
export default async (input) => {
  const a = await echo(input.n);
  const b = await echo(a + 1);
  const c = await echo(b + 1);
  return { sum: a + b + c, r: Math.random(), t: Date.now() };
};`;

describe("replay of a recording (recording / replayRecording)", () => {
  it("answers a program's calls from the recording, calling no host function, with the recorded randomness and clock", async () => {
    const stub = freshReplay();
    const result = await inReplay(stub, async (instance) => {
      const live = await instance.executor.execute(RECORDED, { n: 1 }, { id: "rec" });
      const recording = instance.executor.recording("rec");
      const echoes = instance.counters.read().echoes;
      const replayed = await instance.executor.replayRecording(
        JSON.parse(JSON.stringify(recording)),
      );
      return { live, recording, echoes, replayed, after: instance.counters.read().echoes };
    });
    expect(result.recording?.calls.map((call) => call.method)).toEqual(["echo", "echo", "echo"]);
    expect(result.replayed).toEqual({ ...result.live, executionId: "rec" });
    // No host function ran during the replay.
    expect(result.after).toBe(result.echoes);
    // The scratch execution is gone; the recorded one is unchanged.
    const listed = await inReplay(stub, (instance) =>
      instance.executor.list({}).items.map((item) => item.executionId),
    );
    expect(listed).toEqual(["rec"]);
  });

  it("reports a changed call as bridge/diverged, a call past the recording as bridge/frontier, and a call left unasked as bridge/diverged", async () => {
    const stub = freshReplay();
    const outcomes = await inReplay(stub, async (instance) => {
      await instance.executor.execute(RECORDED, { n: 1 }, { id: "rec" });
      const recording = instance.executor.recording("rec");
      if (recording === null) throw new Error("no recording");
      const codeOf = async (source: string) => {
        const execution = await instance.executor.replayRecording(recording, { source });
        return execution.state === "failed" ? execution.error?.code : execution.state;
      };
      return {
        changed: await codeOf(RECORDED.replace("await echo(a + 1)", "await echo(a + 100)")),
        appended: await codeOf(RECORDED.replace("return {", "await echo(0); return {")),
        fewer: await codeOf(RECORDED.replace("const c = await echo(b + 1);", "const c = 0;")),
        same: await codeOf(RECORDED),
      };
    });
    expect(outcomes).toEqual({
      changed: "bridge/diverged",
      appended: "bridge/frontier",
      fewer: "bridge/diverged",
      same: "completed",
    });
    expect(await storedCounters(stub)).toMatchObject({ echoes: 3 });
  });

  it("refuses a malformed recording with bridge/invalid-argument, and answers null for no replay run", async () => {
    const stub = freshReplay();
    const result = await inReplay(stub, async (instance) => {
      await instance.executor.execute(`export default () => 1;`, undefined, {
        id: "plain",
        onInterrupt: "fail",
      });
      let caught: unknown;
      try {
        await instance.executor.replayRecording({ executionId: "x" } as never);
      } catch (error) {
        caught = error;
      }
      return {
        refused: isBridgeError(caught, "bridge/invalid-argument"),
        plain: instance.executor.recording("plain"),
        missing: instance.executor.recording("missing"),
      };
    });
    expect(result).toEqual({ refused: true, plain: null, missing: null });
  });
});
