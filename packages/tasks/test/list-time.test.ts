import { describe, expect, it } from "vitest";
import { inFixture, sleep } from "./helpers";

describe("list() by creation time", () => {
  it("keeps only runs created after and before the given times, newest first, and pages within them", async () => {
    await inFixture(async (fixture) => {
      const created: number[] = [];
      for (let i = 0; i < 5; i++) {
        const { createdAt } = await fixture.tasks.run("steps@v1", { n: 0 }, { runId: `t${i}` });
        created.push(createdAt);
        await sleep(3);
      }
      const ids = (options: Parameters<typeof fixture.tasks.list>[0]) =>
        fixture.tasks.list(options).items.map((run) => run.runId);
      expect(ids({ createdAfter: created[1] })).toEqual(["t4", "t3", "t2"]);
      expect(ids({ createdBefore: new Date(created[3] as number) })).toEqual(["t2", "t1", "t0"]);
      expect(ids({ createdAfter: created[0], createdBefore: created[4] })).toEqual([
        "t3",
        "t2",
        "t1",
      ]);
      const first = fixture.tasks.list({ createdAfter: created[0], limit: 2 });
      const second = fixture.tasks.list({
        createdAfter: created[0],
        limit: 2,
        cursor: first.next ?? undefined,
      });
      expect([...first.items, ...second.items].map((run) => run.runId)).toEqual([
        "t4",
        "t3",
        "t2",
        "t1",
      ]);
      expect(second.next).toBeNull();
      for (const bad of ["yesterday", Number.NaN, Number.POSITIVE_INFINITY, new Date("nope")]) {
        expect(() => fixture.tasks.list({ createdAfter: bad as number })).toThrow(
          expect.objectContaining({ code: "tasks/invalid-argument" }),
        );
      }
    });
  });
});
