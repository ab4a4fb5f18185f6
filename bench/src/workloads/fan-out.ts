import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { type TaskStep, Tasks } from "@durablekit/tasks";
import { type CountingState, countingState } from "@durablekit/test-kit";
import type { Figures, Workload, WorkloadContext } from "../workload";

/** The objects the children of a round are spread over. */
const OBJECTS = 100;
/** The fan-out sizes measured. */
const SIZES = [100, 1_000] as const;

/** What a fan-out run takes. */
interface FanInput {
  children: number;
  prefix: string;
}

/** Rows written by an object's parts since it started (its SQL observed from the constructor). */
interface Counted {
  rowsWritten(): number;
  /** Messages it still owes other objects. */
  owed(): number;
  /** `receiveTasks` calls it answered. */
  received(): number;
}

/**
 * A shard of the fan-out bench: `square@v1` is one journaled step answering `i²`; `square(i)` is
 * the same answer over plain RPC, without durability (the floor).
 */
export class FanShard extends DurableObject<Env> implements Counted {
  readonly #counted: CountingState;
  readonly tasks: Tasks;
  readonly alarms: Alarms;
  #received = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#counted = countingState(ctx);
    this.tasks = new Tasks(this.#counted.state, {
      definitions: {
        "square@v1": async (input: { i: number }, step: TaskStep) =>
          step.do("work", () => input.i * input.i),
      },
      children: { namespaces: env, self: "FAN_SHARD" },
    });
    this.alarms = new Alarms(this.#counted.state, { parts: [this.tasks] });
  }

  override alarm(): Promise<void> {
    return this.alarms.alarm();
  }

  receiveTasks(message: unknown): Promise<unknown> {
    this.#received++;
    return this.tasks.receive(message);
  }

  square(i: number): number {
    return i * i;
  }

  rowsWritten(): number {
    return this.#counted.counts().rowsWritten;
  }

  owed(): number {
    return this.ctx.storage.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_outbox")
      .one().n;
  }

  received(): number {
    return this.#received;
  }
}

/**
 * The parent of the fan-out bench: `fan@v1` starts one child run per child (child `i` in shard
 * `<prefix>-<i mod 100>`) and awaits them all; `fanOut` resolves when the run completed.
 */
export class FanParent extends DurableObject<Env> implements Counted {
  readonly #counted: CountingState;
  readonly tasks: Tasks;
  readonly alarms: Alarms;
  readonly #done = new Map<string, (result: unknown) => void>();
  #received = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#counted = countingState(ctx);
    this.tasks = new Tasks(this.#counted.state, {
      definitions: {
        "fan@v1": async (input: FanInput, step: TaskStep) => {
          // Started in one step (one RPC per shard object), as a job that fans out wide does.
          const runs = await step.startChildren(
            "start",
            Array.from({ length: input.children }, (_, i) => ({
              target: { binding: "FAN_SHARD", name: `${input.prefix}-${i % OBJECTS}` },
              definition: "square@v1",
              input: { i },
            })),
          );
          const outcomes = await step.awaitChildren("all", runs);
          let sum = 0;
          for (const o of outcomes) sum += o.state === "completed" ? (o.result as number) : 0;
          return sum;
        },
      },
      maxStepsPerRun: 2_000,
      children: { namespaces: env, self: "FAN_PARENT" },
      onEvent: (event) => {
        if (event.type !== "task:completed") return;
        const done = this.#done.get(event.runId);
        if (done) queueMicrotask(() => done(this.tasks.get(event.runId)));
      },
    });
    this.alarms = new Alarms(this.#counted.state, { parts: [this.tasks] });
  }

  override alarm(): Promise<void> {
    return this.alarms.alarm();
  }

  receiveTasks(message: unknown): Promise<unknown> {
    this.#received++;
    return this.tasks.receive(message);
  }

  /** Runs a fan-out of `children` to its end: the sum of the squares. */
  async fanOut(children: number, prefix: string): Promise<number> {
    const runId = `fan-${prefix}`;
    const completed = new Promise<unknown>((resolve) => this.#done.set(runId, resolve));
    await this.tasks.run("fan@v1", { children, prefix } as never, { runId });
    const run = (await completed) as { state: string; result?: unknown };
    return run.result as number;
  }

  /** The same answers by sequential plain RPC, without durability: the sum of the squares. */
  async floor(children: number, prefix: string): Promise<number> {
    let sum = 0;
    for (let i = 0; i < children; i++) {
      sum += await this.env.FAN_SHARD.getByName(`${prefix}-${i % OBJECTS}`).square(i);
    }
    return sum;
  }

  rowsWritten(): number {
    return this.#counted.counts().rowsWritten;
  }

  owed(): number {
    return this.ctx.storage.sql
      .exec<{ n: number }>("SELECT count(*) AS n FROM dk_tasks_outbox")
      .one().n;
  }

  received(): number {
    return this.#received;
  }
}

/** The bindings this workload adds to the bench Worker. */
interface Env {
  FAN_PARENT: DurableObjectNamespace<FanParent>;
  FAN_SHARD: DurableObjectNamespace<FanShard>;
}

const squares = (n: number) =>
  Array.from({ length: n }, (_, i) => i * i).reduce((a, b) => a + b, 0);

/** Sums a figure over the parent and the shards of a round. */
async function total(
  parent: DurableObjectStub<FanParent>,
  shards: Array<DurableObjectStub<FanShard>>,
  read: (object: Counted) => Promise<number> | number,
): Promise<number> {
  let sum = await read(parent as unknown as Counted);
  for (const shard of shards) sum += await read(shard as unknown as Counted);
  return sum;
}

async function durable({ env }: WorkloadContext): Promise<Figures> {
  const e = env as unknown as Env;
  const figures: Figures = {};
  for (const children of SIZES) {
    const prefix = crypto.randomUUID();
    const parent = e.FAN_PARENT.getByName(`parent-${prefix}`);
    const shards = Array.from({ length: OBJECTS }, (_, i) =>
      e.FAN_SHARD.getByName(`${prefix}-${i}`),
    );
    const start = performance.now();
    const sum = await parent.fanOut(children, prefix);
    figures[`ms${children}`] = performance.now() - start;
    if (sum !== squares(children)) throw new Error(`fan-out of ${children} answered ${sum}`);
    // Every settlement acknowledged (the alarm deletes it once the parent answered): nothing owed.
    for (let i = 0; (await total(parent, shards, (o) => o.owed())) > 0; i++) {
      if (i > 500) throw new Error("messages still owed after the fan-out");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const rows = await total(parent, shards, (o) => o.rowsWritten());
    const rpcs = await total(parent, shards, (o) => o.received());
    figures[`rows${children}`] = rows;
    figures[`rowsPerChild${children}`] = rows / children;
    figures[`rpcsPerChild${children}`] = rpcs / children;
  }
  return figures;
}

async function floor({ env }: WorkloadContext): Promise<Figures> {
  const e = env as unknown as Env;
  const figures: Figures = {};
  for (const children of SIZES) {
    const prefix = crypto.randomUUID();
    const parent = e.FAN_PARENT.getByName(`parent-${prefix}`);
    const start = performance.now();
    const sum = await parent.floor(children, prefix);
    figures[`ms${children}`] = performance.now() - start;
    if (sum !== squares(children)) throw new Error(`the floor of ${children} answered ${sum}`);
    figures[`rows${children}`] = 0;
    figures[`rowsPerChild${children}`] = 0;
    figures[`rpcsPerChild${children}`] = 1;
  }
  return figures;
}

/**
 * A job fanned out to child runs in 100 objects and fanned back in (`step.startChild`,
 * `step.awaitChildren`), against the same answers fetched by sequential RPC without durability.
 */
export const fanOut: Workload = {
  name: "fan-out",
  title: `a fan-out to child runs in ${OBJECTS} objects, started in one step (startChildren) and awaited all, until the parent completed (durablekit tasks) vs the same answers by sequential RPC without durability (the floor); rows and RPCs counted in every object`,
  metrics: SIZES.flatMap((n) => {
    const size = n.toLocaleString("en");
    return [
      {
        key: `ms${n}`,
        label: `${size} children: time to the parent's result`,
        unit: "ms",
        better: "lower" as const,
      },
      {
        key: `rows${n}`,
        label: `${size} children: rows written in all objects`,
        unit: "rows",
        better: "lower" as const,
      },
      {
        key: `rowsPerChild${n}`,
        label: `${size} children: rows per child`,
        unit: "rows",
        better: "lower" as const,
      },
      {
        key: `rpcsPerChild${n}`,
        label: `${size} children: RPCs per child`,
        unit: "RPCs",
        better: "lower" as const,
      },
    ];
  }),
  ours: { name: "durable child runs", run: durable },
  anchor: { name: "sequential RPC (floor)", run: floor },
};
