import { env, runInDurableObject } from "cloudflare:test";
import { type AlarmPart, isAlarmPart } from "@durablekit/compose";
import type { Executor } from "@durablekit/rpc-bridge";
import type { Streams } from "@durablekit/streams";
import type { TaskDefinitions, Tasks } from "@durablekit/tasks";
import { describe, expect, expectTypeOf, it } from "vitest";

describe("every waking part", () => {
  it("satisfies the one exported part interface (checked by the type checker)", () => {
    expectTypeOf<Tasks<TaskDefinitions>>().toExtend<AlarmPart>();
    expectTypeOf<Streams>().toExtend<AlarmPart>();
    expectTypeOf<Executor>().toExtend<AlarmPart>();
  });

  it("is recognised as a part at run time", async () => {
    const stub = env.TASKS_AND_SSE.getByName(`parts-${crypto.randomUUID()}`);
    await runInDurableObject(stub, (host) => {
      expect(isAlarmPart(host.tasks)).toBe(true);
      expect(isAlarmPart(host.streams)).toBe(true);
      expect(isAlarmPart(host.alarms)).toBe(true);
    });
  });
});
