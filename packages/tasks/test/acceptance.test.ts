import { describe, expect, it } from "vitest";
import { inFixture } from "./helpers";

describe("acceptance", () => {
  it("deduplicates acceptance by run id and by idempotency key", async () => {
    await inFixture(async (fixture) => {
      const first = await fixture.tasks.run(
        "steps@v1",
        { n: 1 },
        { runId: "r1", idempotencyKey: "k1" },
      );
      expect(first).toMatchObject({ runId: "r1", accepted: true });
      const byId = await fixture.tasks.run("steps@v1", { n: 99 }, { runId: "r1" });
      const byKey = await fixture.tasks.run("steps@v1", { n: 99 }, { idempotencyKey: "k1" });
      const byBoth = await fixture.tasks.run(
        "steps@v1",
        { n: 99 },
        { runId: "r1", idempotencyKey: "k1" },
      );
      for (const receipt of [byId, byKey, byBoth]) {
        expect(receipt).toMatchObject({ runId: "r1", accepted: false, createdAt: first.createdAt });
      }
      await fixture.settled("r1");
      // The joined calls started nothing: one run, one execution of its one step.
      expect(fixture.executions()).toEqual({ s0: 1 });
      expect(fixture.tasks.list().items).toHaveLength(1);
      expect(fixture.tasks.getByIdempotencyKey("k1")).toMatchObject({
        runId: "r1",
        state: "completed",
      });
    });
  });

  it("joins the run that owns an idempotency key when a retry comes with a fresh run id", async () => {
    await inFixture(async (fixture) => {
      // The key first (the engine names the run), then a client retry with an id of its own.
      const first = await fixture.tasks.run("sleepy@v1", { ms: 60_000 }, { idempotencyKey: "k" });
      const retry = await fixture.tasks.run(
        "sleepy@v1",
        { ms: 1 },
        { runId: "fresh", idempotencyKey: "k" },
      );
      expect(retry).toMatchObject({
        runId: first.runId,
        accepted: false,
        joinedBy: "idempotencyKey",
        createdAt: first.createdAt,
      });
      // A run id and key given together first, then the same key with another fresh id.
      const owner = await fixture.tasks.run(
        "sleepy@v1",
        { ms: 60_000 },
        { runId: "owner", idempotencyKey: "k2" },
      );
      expect(owner).toMatchObject({ runId: "owner", accepted: true, joinedBy: null });
      const again = await fixture.tasks.run(
        "sleepy@v1",
        { ms: 1 },
        { runId: "other", idempotencyKey: "k2" },
      );
      expect(again).toMatchObject({ runId: "owner", accepted: false, joinedBy: "idempotencyKey" });
      expect(await fixture.tasks.run("sleepy@v1", { ms: 1 }, { runId: "owner" })).toMatchObject({
        runId: "owner",
        accepted: false,
        joinedBy: "runId",
      });
      // No run was created under the fresh ids.
      expect(fixture.tasks.get("fresh")).toBeNull();
      expect(fixture.tasks.get("other")).toBeNull();
      expect(fixture.tasks.list().items).toHaveLength(2);
    });
  });

  it("refuses a key or run id reused under another definition and a pair naming two runs", async () => {
    await inFixture(async (fixture) => {
      await fixture.tasks.run("sleepy@v1", { ms: 60_000 }, { runId: "a", idempotencyKey: "ka" });
      await fixture.tasks.run("sleepy@v1", { ms: 60_000 }, { runId: "b", idempotencyKey: "kb" });
      const refusals = [
        fixture.tasks.run("steps@v1", { n: 1 }, { runId: "a" }),
        fixture.tasks.run("steps@v1", { n: 1 }, { idempotencyKey: "ka" }),
        fixture.tasks.run("sleepy@v1", { ms: 1 }, { runId: "a", idempotencyKey: "kb" }),
        fixture.tasks.run("sleepy@v1", { ms: 1 }, { runId: "a", idempotencyKey: "new-key" }),
      ];
      for (const refusal of refusals) {
        await expect(refusal).rejects.toMatchObject({ code: "tasks/conflict" });
      }
      expect(
        fixture.tasks
          .list()
          .items.map((run) => run.runId)
          .sort(),
      ).toEqual(["a", "b"]);
    });
  });

  it("refuses an unknown definition and invalid names before writing anything", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.tasks as unknown as {
        run(name: string, input?: unknown, options?: object): Promise<unknown>;
      };
      await expect(tasks.run("nope@v1")).rejects.toMatchObject({
        name: "TasksError",
        code: "tasks/unknown-definition",
        retryable: false,
      });
      await expect(tasks.run("")).rejects.toMatchObject({ code: "tasks/invalid-argument" });
      await expect(
        tasks.run("steps@v1", { n: 1 }, { runId: "x".repeat(257) }),
      ).rejects.toMatchObject({
        code: "tasks/invalid-argument",
      });
      expect(() => fixture.build({ "__dk.internal": async () => 1 })).toThrow(/reserved prefix/);
      expect(fixture.tasks.list()).toEqual({ items: [], next: null });
    });
  });

  it("refuses an oversized or unserializable input at acceptance, naming the path", async () => {
    await inFixture(async (fixture) => {
      const small = fixture.build(fixture.definitions(), { maxValueBytes: 1_024 });
      await expect(
        small.run("steps@v1", { n: 1, pad: "x".repeat(2_000) } as never),
      ).rejects.toMatchObject({
        code: "tasks/too-large",
        cause: { code: "journal/too-large" },
      });
      await expect(small.run("steps@v1", { n: 1, callback: () => 1 } as never)).rejects.toThrow(
        /input\.callback/,
      );
      await expect(
        small.run("steps@v1", { n: 1, callback: () => 1 } as never),
      ).rejects.toMatchObject({ code: "tasks/unserializable" });
      expect(small.list()).toEqual({ items: [], next: null });
    });
  });

  it("keeps codec types in input, metadata and results", async () => {
    await inFixture(async (fixture) => {
      const tasks = fixture.build({
        "echo@v1": async (input: { when: Date; tags: Set<string> }, step) => {
          const big = await step.do("big", () => 2n ** 70n);
          return { when: input.when, tags: input.tags, big };
        },
      });
      const when = new Date("2030-01-02T03:04:05.000Z");
      const { runId } = await tasks.run(
        "echo@v1",
        { when, tags: new Set(["a"]) },
        { metadata: { at: when } },
      );
      const done = await fixture.settled(runId, tasks);
      expect(done).toMatchObject({ state: "completed", metadata: { at: when } });
      if (done.state !== "completed") throw new Error("unreachable");
      expect(done.result).toEqual({ when, tags: new Set(["a"]), big: 2n ** 70n });
    });
  });

  it("scopes a handle to its definition", async () => {
    await inFixture(async (fixture) => {
      const sleepy = fixture.tasks.handle("sleepy@v1");
      const steps = fixture.tasks.handle("steps@v1");
      const { runId } = await sleepy.run({ ms: 60_000 }, { idempotencyKey: "h" });
      expect(sleepy.get(runId)).toMatchObject({ runId, definition: "sleepy@v1" });
      expect(steps.get(runId)).toBeNull();
      expect(steps.getByIdempotencyKey("h")).toBeNull();
      expect(await steps.cancel(runId)).toBe(false);
      expect(await sleepy.cancel(runId, "changed my mind")).toBe(true);
      expect(sleepy.get(runId)).toMatchObject({ state: "cancelled", reason: "changed my mind" });
    });
  });

  it("lists runs newest first, filtered and paged", async () => {
    await inFixture(async (fixture) => {
      for (const id of ["r1", "r2", "r3"]) {
        await fixture.tasks.run("sleepy@v1", { ms: 60_000 }, { runId: id });
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      await fixture.tasks.run("steps@v1", { n: 0 }, { runId: "r4" });
      await fixture.settled("r4");
      const ids = (page: { items: { runId: string }[] }) => page.items.map((run) => run.runId);
      expect(fixture.tasks.list()).toMatchObject({ next: null });
      expect(ids(fixture.tasks.list())).toEqual(["r4", "r3", "r2", "r1"]);
      const first = fixture.tasks.list({ definition: "sleepy@v1", limit: 2 });
      expect(ids(first)).toEqual(["r3", "r2"]);
      expect(first.next).toEqual(expect.any(String));
      const second = fixture.tasks.list({
        definition: "sleepy@v1",
        limit: 2,
        cursor: first.next as string,
      });
      expect(ids(second)).toEqual(["r1"]);
      expect(second.next).toBeNull();
      expect(ids(fixture.tasks.list({ state: "completed" }))).toEqual(["r4"]);
      expect(fixture.tasks.list({ state: ["waiting"] }).items).toHaveLength(3);
      expect(() => fixture.tasks.list({ limit: 0 })).toThrow(/limit/);
      expect(() => fixture.tasks.list({ cursor: "r2" })).toThrow(/cursor/);
      // The token still pages after the run it was taken from is gone.
      expect(await fixture.tasks.cancel("r2")).toBe(true);
      expect(fixture.tasks.delete({ state: ["cancelled"] })).toBe(1);
      const after = fixture.tasks.list({ definition: "sleepy@v1", cursor: first.next as string });
      expect(ids(after)).toEqual(["r1"]);
    });
  });
});
