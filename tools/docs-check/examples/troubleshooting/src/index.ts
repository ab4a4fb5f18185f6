import { DurableObject } from "cloudflare:workers";
import { ChatTurns } from "@durablekit/chat-adapter";
import { Alarms } from "@durablekit/compose";
import { JournalStore } from "@durablekit/handle-journal";
import { Executor } from "@durablekit/rpc-bridge";
import { Streams } from "@durablekit/streams";
import { type TaskDefinitions, type TaskStep, Tasks } from "@durablekit/tasks";

interface Env {
  KV_NOTES: DurableObjectNamespace<KvNotes>;
  NO_ALARM: DurableObjectNamespace<NoAlarm>;
  NOT_DELEGATED: DurableObjectNamespace<NotDelegated>;
  PER_REQUEST: DurableObjectNamespace<PerRequest>;
  NO_ALARM_STREAMS: DurableObjectNamespace<NoAlarmStreams>;
}

/** What an object answers: the thrown error's text, as a caller sees it. */
async function outcome(work: () => unknown): Promise<string> {
  try {
    await work();
    return "ok";
  } catch (error) {
    return String(error);
  }
}

/** Mistake: a class created under `new_classes` (key-value storage) composes a package. */
export class KvNotes extends DurableObject<Env> {
  append() {
    return outcome(() => new Streams(this.ctx).open("notes").append({ text: "hello" }));
  }

  /** Every part that takes a `ctx`, constructed here: what each one throws (its code and message). */
  everyPart(): Record<string, { code: string | undefined; message: string }> {
    const parts: Record<string, () => unknown> = {
      Alarms: () => new Alarms(this.ctx, { parts: [] }),
      Streams: () => new Streams(this.ctx),
      Tasks: () => new Tasks(this.ctx, { definitions }),
      JournalStore: () => new JournalStore(this.ctx),
      Executor: () => new Executor(this.ctx, { loader: {} as WorkerLoader, modules: {} }),
      ChatTurns: () => new ChatTurns(this.ctx, { streams: {} as Streams }),
    };
    const thrown: Record<string, { code: string | undefined; message: string }> = {};
    for (const [name, construct] of Object.entries(parts)) {
      try {
        construct();
        thrown[name] = { code: undefined, message: "constructed" };
      } catch (error) {
        const { code, message } = error as { code?: string; message: string };
        thrown[name] = { code, message };
      }
    }
    return thrown;
  }
}

const definitions = {
  "nap@v1": async (_input: unknown, step: TaskStep) => {
    await step.sleep("nap", 60_000);
  },
} satisfies TaskDefinitions;

/** Mistake: the object composes Tasks but has no `alarm()` handler. */
export class NoAlarm extends DurableObject<Env> {
  readonly tasks = new Tasks(this.ctx, { definitions });

  start() {
    return outcome(() => this.tasks.run("nap@v1", {}, { runId: "nap" }));
  }
}

const shortNap = {
  "nap@v1": async (_input: unknown, step: TaskStep) => {
    await step.sleep("nap", 100);
  },
} satisfies TaskDefinitions;

/** Mistake: the object has an `Alarms` over its parts, but its `alarm()` does not call it. */
export class NotDelegated extends DurableObject<Env> {
  readonly tasks = new Tasks(this.ctx, { definitions: shortNap });
  readonly alarms = new Alarms(this.ctx, { parts: [this.tasks] });

  override async alarm(): Promise<void> {
    // forgot: return this.alarms.alarm();
  }

  start() {
    return outcome(() => this.tasks.run("nap@v1", {}, { runId: "nap" }));
  }

  /** Another run asks for a wake: it finds that the nap's alarm never reached the Alarms. */
  again() {
    return outcome(() => this.tasks.run("nap@v1", {}, { runId: "again" }));
  }
}

/** Mistake: no `alarm()` handler, and a part other than `Tasks` that wakes (a stream's expiry). */
export class NoAlarmStreams extends DurableObject<Env> {
  readonly streams = new Streams(this.ctx);

  open() {
    return outcome(() => this.streams.open("short-lived", { ttlMs: 60_000 }).append({ n: 1 }));
  }
}

/** Mistake: a part built again per request, beside the one the constructor built. */
export class PerRequest extends DurableObject<Env> {
  readonly streams = new Streams(this.ctx);

  append() {
    return outcome(() => new Streams(this.ctx).open("notes").append({ text: "hello" }));
  }
}

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/kv-class") return new Response(await env.KV_NOTES.getByName("a").append());
    if (pathname === "/kv-class/every-part") {
      return Response.json(await env.KV_NOTES.getByName("a").everyPart());
    }
    if (pathname === "/no-alarm") return new Response(await env.NO_ALARM.getByName("a").start());
    if (pathname === "/not-delegated") {
      return new Response(await env.NOT_DELEGATED.getByName("a").start());
    }
    if (pathname === "/not-delegated/again") {
      return new Response(await env.NOT_DELEGATED.getByName("a").again());
    }
    if (pathname === "/no-alarm/streams") {
      return new Response(await env.NO_ALARM_STREAMS.getByName("a").open());
    }
    if (pathname === "/per-request") {
      return new Response(await env.PER_REQUEST.getByName("a").append());
    }
    return new Response("ok");
  },
} satisfies ExportedHandler<Env>;
