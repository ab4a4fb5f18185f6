import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { Streams } from "@durablekit/streams";
import { type TaskDefinitions, type TaskStep, Tasks } from "@durablekit/tasks";

interface Env {
  KV_NOTES: DurableObjectNamespace<KvNotes>;
  NO_ALARM: DurableObjectNamespace<NoAlarm>;
  NOT_DELEGATED: DurableObjectNamespace<NotDelegated>;
  PER_REQUEST: DurableObjectNamespace<PerRequest>;
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
    if (pathname === "/no-alarm") return new Response(await env.NO_ALARM.getByName("a").start());
    if (pathname === "/not-delegated") {
      return new Response(await env.NOT_DELEGATED.getByName("a").start());
    }
    if (pathname === "/not-delegated/again") {
      return new Response(await env.NOT_DELEGATED.getByName("a").again());
    }
    if (pathname === "/per-request") {
      return new Response(await env.PER_REQUEST.getByName("a").append());
    }
    return new Response("ok");
  },
} satisfies ExportedHandler<Env>;
