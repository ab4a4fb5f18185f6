import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { ChatRoom } from "../src/chat-room";
import { WORKSPACE_NAME, type Workspace } from "../src/workspace";

const base = "http://demo";

function get(path: string): Promise<Response> {
  return exports.default.fetch(`${base}${path}`);
}

describe("the inspector routes (/inspect, /chat/:chatId/inspect)", () => {
  it("shows the workspace's streams: the page, the overview and a stream's chunks", async () => {
    const streamId = `inspect-${crypto.randomUUID()}`;
    await runInDurableObject(env.WORKSPACE.getByName(WORKSPACE_NAME), (workspace: Workspace) => {
      const writer = workspace.streams.open(streamId, { tag: "inspect-test" });
      writer.append({ i: 0 });
      writer.close();
    });
    const page = await get("/inspect/");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('src="/inspect/inspect.js"');
    expect(await (await get("/inspect/api/overview")).json()).toMatchObject({
      version: 1,
      parts: ["tasks", "programs", "streams"],
    });
    expect(await (await get("/inspect/api/streams?tag=inspect-test")).json()).toMatchObject({
      items: [{ streamId, state: "completed", cursor: 1 }],
    });
    expect(
      await (await get(`/inspect/api/streams/${encodeURIComponent(streamId)}`)).json(),
    ).toMatchObject({ chunks: [{ seq: 0, value: { i: 0 } }] });
  });

  it("shows a task run's steps on its time axis", async () => {
    const runId = `inspect-run-${crypto.randomUUID()}`;
    await runInDurableObject(env.WORKSPACE.getByName(WORKSPACE_NAME), (workspace: Workspace) =>
      workspace.tasks.run("demo.count@v1", { steps: 2 }, { runId }),
    );
    let view: { run: { state: string }; steps: Array<{ name: string; state: string }> } | null =
      null;
    for (let i = 0; i < 100 && view?.run.state !== "completed"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      view = await (await get(`/inspect/api/runs/${runId}`)).json();
    }
    expect(view).toMatchObject({
      version: 1,
      run: { runId, definition: "demo.count@v1", state: "completed", attempts: 1 },
      input: { steps: 2 },
      steps: [
        { index: 0, name: "step-0", kind: "do", state: "completed", attempts: 1 },
        { index: 1, name: "step-1", kind: "do", state: "completed", attempts: 1 },
      ],
    });
    const runs = await (await get("/inspect/api/runs?definition=demo.count%40v1")).json();
    expect((runs as { items: Array<{ runId: string }> }).items.map((r) => r.runId)).toContain(
      runId,
    );
  });

  it("shows a chat room's turns below the chat's own path, percent-encoded ids included", async () => {
    const chatId = `room ${crypto.randomUUID()}`;
    const turnId = await runInDurableObject(env.CHAT.getByName(chatId), (room: ChatRoom) => {
      const turn = room.chat.startTurn(chatId, { messageId: "m-1" });
      turn.write({ type: "text-start", id: "t" });
      turn.finish();
      return turn.turnId;
    });
    const mount = `/chat/${encodeURIComponent(chatId)}/inspect`;
    const page = await get(`${mount}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`src="${mount}/inspect.js"`);
    const turns = await get(`${mount}/api/chats/${encodeURIComponent(chatId)}/turns`);
    expect(await turns.json()).toMatchObject({ items: [{ turnId, messageId: "m-1" }] });
    expect(await (await get(`${mount}/api/turns/${turnId}`)).json()).toMatchObject({
      turn: { chatId, state: "completed" },
      chunks: [
        { type: "start", messageId: "m-1" },
        { type: "text-start", id: "t" },
      ],
    });
  });

  it("refuses inside the object when DEMO_DEBUG is not on, whatever route reached it", async () => {
    const workspace = env.WORKSPACE.getByName(WORKSPACE_NAME) as unknown as {
      inspect(request: Request): Promise<Response>;
    };
    // The test config sets DEMO_DEBUG=on; the object's own check reads it from its env.
    const allowed = await workspace.inspect(new Request(`${base}/inspect/api/overview`));
    expect(allowed.status).toBe(200);
    await runInDurableObject(env.WORKSPACE.getByName(WORKSPACE_NAME), async (w: Workspace) => {
      const env = (w as unknown as { env: { DEMO_DEBUG?: string } }).env;
      const before = env.DEMO_DEBUG;
      env.DEMO_DEBUG = "off";
      try {
        const refused = await w.inspect(new Request(`${base}/inspect/api/overview`));
        expect(refused.status).toBe(403);
        expect(await refused.text()).not.toContain("streams");
      } finally {
        env.DEMO_DEBUG = before;
      }
    });
  });
});
