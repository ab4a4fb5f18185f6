import { DurableObject } from "cloudflare:workers";
import { Alarms } from "@durablekit/compose";
import { sseResponse } from "@durablekit/sse";
import { Streams } from "@durablekit/streams";
import { type TaskDefinitions, type TaskStep, Tasks } from "@durablekit/tasks";

/** The step's real work: a model, an API call. */
async function generate(part: string): Promise<string> {
  return part.toUpperCase();
}

export function storyDefinitions(host: { streams: Streams }) {
  return {
    "story@v1": async (input: { stream: string; parts: string[] }, step: TaskStep) => {
      // The run is the stream's producer: a re-run step's append is answered as a duplicate.
      // Kept an hour while live, ten minutes once closed (the same options at every open).
      const writer = () =>
        host.streams.open(input.stream, {
          producer: { id: step.runId, epoch: 0 },
          ttlMs: 3_600_000,
          settledTtlMs: 600_000,
        });
      for (const [i, part] of input.parts.entries()) {
        await step.do(`part-${i}`, async () => {
          const text = await generate(part);
          writer().append({ i, text }, { producerSeq: i }); // the step's position is its seq
          return i;
        });
      }
      await step.do("close", () => {
        writer().close(); // readers get `event: done`
      });
      return { parts: input.parts.length };
    },
  } satisfies TaskDefinitions;
}

export class Stories extends DurableObject<Env> {
  readonly streams = new Streams(this.ctx);
  readonly tasks = new Tasks(this.ctx, { definitions: storyDefinitions(this) });
  readonly alarms = new Alarms(this.ctx, { parts: [this.tasks, this.streams] });

  override alarm() {
    return this.alarms.alarm();
  }

  /** Starts the story's run, or joins it: a retry with the same id never starts a second run. */
  async start(id: string, parts: string[]) {
    const { runId, accepted } = await this.tasks.run(
      "story@v1",
      { stream: id, parts },
      { runId: id },
    );
    return { runId, accepted };
  }

  /** The story as SSE; a subscriber who arrives before the first part waits for it (10 s at most). */
  follow(id: string, request: Request) {
    return sseResponse(this.streams, id, { request, waitForStreamMs: 10_000 });
  }
}

export default {
  // Authenticate first, then name the object from the tenant (see "Scaling out").
  async fetch(request, env) {
    const url = new URL(request.url);
    const follow = url.pathname.match(/^\/stories\/([^/]+)\/sse$/);
    if (follow && request.method === "GET") {
      const id = decodeURIComponent(follow[1] ?? "");
      return env.STORIES.getByName(id).follow(id, request);
    }
    return new Response("not found", { status: 404 });
  },
} satisfies ExportedHandler<Env>;
