import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { Executor } from "@durablekit/rpc-bridge";
import { Streams } from "@durablekit/streams";
import { type TaskDefinitions, type TaskStep, Tasks } from "@durablekit/tasks";
import { TestingProbe } from "@durablekit/testing";

export interface OrderInput {
  orderId: string;
  /** How long the order waits before it ships. */
  coolOffMs: number;
}

export class Orders extends DurableObject<Env> {
  // The test clock and instrumented definitions of @durablekit/testing: inert until a test uses them.
  readonly probe = new TestingProbe(this.ctx);
  readonly streams = new Streams(this.ctx, { now: this.probe.now });
  readonly tasks = new Tasks(this.ctx, {
    definitions: this.probe.instrument(this.definitions()),
    now: this.probe.now,
    claimTimeoutMs: 1_000,
  });
  // Checkout programs run as replay runs; their one host module records each payment.
  readonly executor = new Executor(this.ctx, {
    loader: this.env.LOADER,
    onInterrupt: "replay",
    modules: {
      "host:payments": {
        charge: ([orderId, amount]: [string, number]) => this.charge(orderId, amount),
      },
    },
  });
  readonly alarms = new Alarms(this.ctx, { parts: [this.tasks, this.streams, this.executor] });

  override alarm() {
    return this.alarms.alarm();
  }

  place(input: OrderInput) {
    return this.tasks.run("order@v1", input, { runId: input.orderId });
  }

  approve(orderId: string, by: string) {
    return this.tasks.sendEvent(orderId, "approve", { by });
  }

  checkout(source: string, input: { orderId: string; amount: number }) {
    return this.executor.execute(source, input, { id: `checkout:${input.orderId}` });
  }

  charge(orderId: string, amount: number) {
    this.ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS payments (order_id TEXT NOT NULL, amount INTEGER NOT NULL)",
    );
    this.ctx.storage.sql.exec("INSERT INTO payments VALUES (?, ?)", orderId, amount);
    return { orderId, amount };
  }

  remind(orderId: string, payBy: number) {
    return this.tasks.run("reminder@v1", { orderId, payBy }, { runId: `remind:${orderId}` });
  }

  definitions() {
    return {
      "order@v1": async (input: OrderInput, step: TaskStep) => {
        const total = await step.do("price", () => 42);
        const approval = await step.waitForEvent<{ by: string }>("approval", { type: "approve" });
        await step.sleep("cool-off", input.coolOffMs);
        await step.do("ship", () => {
          const log = this.streams.open(`order:${input.orderId}`, {
            producer: { id: input.orderId, epoch: 0 },
          });
          log.append({ shipped: true, by: approval.by }, { producerSeq: 0 });
          log.close();
        });
        return { total, approvedBy: approval.by };
      },
      "reminder@v1": async (input: { orderId: string; payBy: number }, step: TaskStep) => {
        await step.sleep("grace", 2 * 86_400_000);
        // The handler's own clock: under test, the probe's clock, two days on here too.
        return step.do("remind", () => (Date.now() > input.payBy ? "overdue" : "paid in time"));
      },
    } satisfies TaskDefinitions;
  }
}

export default {
  fetch: () => new Response(null, { status: 404 }),
} satisfies ExportedHandler<Env>;
