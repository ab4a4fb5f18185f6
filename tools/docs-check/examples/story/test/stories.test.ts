import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

/** Reads an SSE response to its end and returns its events as `{ event, id, data }`. */
async function events(response: Response) {
  const text = await response.text();
  return text
    .split("\n\n")
    .filter((block) => block.trim() !== "" && !block.startsWith(":"))
    .map((block) => {
      const field = (name: string) =>
        block
          .split("\n")
          .find((line) => line.startsWith(`${name}: `))
          ?.slice(name.length + 2);
      return { event: field("event") ?? "message", id: field("id"), data: field("data") };
    });
}

const follow = (id: string, headers: HeadersInit = {}) =>
  exports.default.fetch(new Request(`http://stories/stories/${id}/sse`, { headers }));

describe("a story followed over SSE", () => {
  it("delivers every part once, in order, then done", async () => {
    const id = `story-${crypto.randomUUID()}`;
    const stub = env.STORIES.getByName(id);
    expect(await stub.start(id, ["once", "upon", "a time"])).toEqual({ runId: id, accepted: true });
    expect(await stub.start(id, ["once", "upon", "a time"])).toEqual({
      runId: id,
      accepted: false,
    });

    const all = await events(await follow(id));
    expect(all.filter((e) => e.event === "message")).toEqual([
      { event: "message", id: "0", data: '{"i":0,"text":"ONCE"}' },
      { event: "message", id: "1", data: '{"i":1,"text":"UPON"}' },
      { event: "message", id: "2", data: '{"i":2,"text":"A TIME"}' },
    ]);
    expect(all.at(-1)).toMatchObject({ event: "done" });
  });

  it("resumes after Last-Event-ID with only what came after", async () => {
    const id = `story-${crypto.randomUUID()}`;
    await env.STORIES.getByName(id).start(id, ["a", "b", "c", "d"]);
    await events(await follow(id)); // to the end: the run closed the stream
    const rest = await events(await follow(id, { "Last-Event-ID": "1" }));
    expect(rest.filter((e) => e.event === "message").map((e) => e.id)).toEqual(["2", "3"]);
    expect(rest.at(-1)).toMatchObject({ event: "done" });
  });

  it("serves a subscriber who arrives before the story starts", async () => {
    const id = `story-${crypto.randomUUID()}`;
    const early = follow(id); // waits (bounded) for the stream instead of a fatal 404
    await scheduler.wait(200);
    await env.STORIES.getByName(id).start(id, ["late", "start"]);
    const response = await early;
    expect(response.status).toBe(200);
    const all = await events(response);
    expect(all.filter((e) => e.event === "message").map((e) => e.id)).toEqual(["0", "1"]);
  });
});
