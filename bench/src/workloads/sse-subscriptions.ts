import {
  DurableStreamsHandler,
  DurableStreamsReceiver,
  DurableStreamsSubscriptions,
} from "@durablekit/sse";
import { Streams } from "@durablekit/streams";
import { type TaskStep, Tasks, type TaskTriggerInput } from "@durablekit/tasks";
import type { Figures, Workload } from "../workload";
import { CommitCounter } from "./commit-counter";

/** Events appended, one append each, each waited for before the next. */
const EVENTS = 500;
const STREAM = "events/bench";
const BASE = "https://bench.internal/v1/stream";

/**
 * A stream append that wakes a task, end to end in one object: each of 500 events is one protocol
 * append (answered once its commit is durable); the handler's notice tells the subscription hub,
 * which reads the stream's tail, opens a wake and signs a webhook; the receiver checks the
 * signature and `tasks.trigger` starts the batch's run, and the webhook's `{ done: true }`
 * acknowledges the wake. Each event is waited for (its run accepted) before the next is appended,
 * so every event is its own batch: the latency and cost of one delivery. The anchor side is the
 * same appends with no subscription: what a subscription adds per event. (No anchor has
 * subscriptions: agents/streams has none, and local Workflows has no stream triggers.)
 */
export const sseSubscriptions: Workload = {
  name: "sse-subscriptions",
  title: `${EVENTS} appends, each waking a task through a webhook subscription (hub, signed webhook, receiver, tasks.trigger) in one object`,
  metrics: [
    {
      key: "msPerEvent",
      label: "time per event: append (committed) → its run accepted",
      unit: "ms",
      better: "lower",
    },
    {
      key: "msDelivery",
      label: "delivery latency: append answered → its run accepted",
      unit: "ms",
      better: "lower",
    },
    {
      key: "rowsPerEvent",
      label: "rows written per event (append, notice, hub, run's whole life)",
      unit: "rows",
      better: "lower",
    },
    {
      key: "subscriptionRowsPerEvent",
      label: "rows written per event by the subscription itself (notice, tails, wake, ack)",
      unit: "rows",
      better: "lower",
    },
    {
      key: "commitsPerEvent",
      label: "SQLite commits per event",
      unit: "commits",
      better: "lower",
    },
    {
      key: "runsPerEvent",
      label: "runs started per event (exactly 1)",
      unit: "runs",
      better: "lower",
    },
  ],
  ours: {
    name: "@durablekit/sse subscriptions + tasks.trigger",
    async run({ ctx }) {
      return deliver(ctx, true);
    },
  },
  anchor: {
    name: "the same appends without a subscription",
    async run({ ctx }) {
      return deliver(ctx, false);
    },
  },
};

async function deliver(ctx: DurableObjectState, subscribed: boolean): Promise<Figures> {
  const observed = new CommitCounter(ctx);
  const streams = new Streams(observed.state);
  let runs = 0;
  let taken = 0;
  let waiting: (() => void) | null = null;
  const tasks = new Tasks(observed.state, {
    definitions: {
      "events@v1": async (input: TaskTriggerInput, step: TaskStep) =>
        step.do("take", () => input.to - input.from),
    },
  });
  const hub: DurableStreamsSubscriptions = new DurableStreamsSubscriptions(observed.state, {
    peer: () => ({ fetch: (request) => handler.fetch(request) }),
    fetch: (request) => receiver.fetch(request),
  });
  const handler: DurableStreamsHandler = new DurableStreamsHandler(observed.state, {
    streams,
    ...(subscribed
      ? {
          hub: () => ({
            streamChanged: (id: string) => hub.streamChanged(id),
            fetch: (request: Request) => hub.fetch(request),
          }),
        }
      : {}),
  });
  const receiver: DurableStreamsReceiver = new DurableStreamsReceiver(observed.state, {
    jwks: () => hub.jwks(),
    subscriptions: ["bench"],
    onBatch: async (batch) => {
      const receipt = await tasks.trigger("events@v1", {
        source: batch.stream,
        from: batch.from,
        to: batch.to,
      });
      if (receipt.accepted) runs += 1;
      taken = batch.to;
      waiting?.();
    },
  });
  const json = { "content-type": "application/json" };
  await handler.fetch(new Request(`${BASE}/${STREAM}`, { method: "PUT", headers: json }));
  if (subscribed) {
    await hub.fetch(
      new Request(`${BASE}/__ds/subscriptions/bench`, {
        method: "PUT",
        headers: json,
        body: JSON.stringify({
          type: "webhook",
          streams: [STREAM],
          webhook: { url: "https://receiver.bench.example/hook" },
        }),
      }),
    );
  }
  await ctx.storage.sync();
  observed.counting = true;
  const start = observed.mark();
  let delivery = 0;
  const began = performance.now();
  for (let i = 0; i < EVENTS; i++) {
    const delivered = new Promise<void>((resolve) => {
      waiting = () => {
        if (taken >= i + 1) resolve();
      };
    });
    const answer = await handler.fetch(
      new Request(`${BASE}/${STREAM}`, { method: "POST", headers: json, body: `{"n":${i}}` }),
    );
    if (answer.status >= 300) throw new Error(`append ${i} answered ${answer.status}`);
    if (subscribed) {
      const answered = performance.now();
      if (taken < i + 1) await delivered;
      delivery += performance.now() - answered;
    }
  }
  const msTotal = performance.now() - began;
  // Let the last run finish, then count.
  await ctx.storage.sync();
  const subscriptionRows = observed.sql.counts(start, /dk_sse_(notices|tails|subscriptions|links)/);
  const commits = await observed.commits(start);
  observed.counting = false;
  const figures: Figures = {
    msPerEvent: msTotal / EVENTS,
    rowsPerEvent: observed.rowsWritten(start) / EVENTS,
    subscriptionRowsPerEvent: subscriptionRows.rowsWritten / EVENTS,
    commitsPerEvent: commits / EVENTS,
  };
  if (subscribed) {
    figures.msDelivery = delivery / EVENTS;
    figures.runsPerEvent = runs / EVENTS;
  }
  return figures;
}
