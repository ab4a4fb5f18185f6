import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { inspectorResponse } from "../src/index";
import { freshStub, get, TOKEN } from "./helpers";

const OPERATOR = { ...TOKEN, "x-operator": "yes", "content-type": "application/json" };

/** A POST of a control route on `stub` (an operator's unless `headers` says otherwise). */
function post(
  stub: ReturnType<typeof freshStub>,
  path: string,
  body: unknown = {},
  headers: Record<string, string> = OPERATOR,
) {
  return get(stub, `/admin/api/runs/${path}`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

async function waitingRun() {
  const stub = freshStub();
  await runInDurableObject(stub, async ({ tasks }) => {
    await tasks.run("approval@v1", undefined, { runId: "r1" });
  });
  return stub;
}

const stateOf = async (stub: ReturnType<typeof freshStub>) =>
  runInDurableObject(stub, ({ tasks }) => tasks.get("r1")?.state);

describe("the run controls", () => {
  it("pause, resume and restart a run for an operator, and the run's view shows it", async () => {
    const stub = await waitingRun();
    const paused = await post(stub, "r1/pause");
    expect(paused.status).toBe(200);
    expect(paused.headers.get("cache-control")).toBe("no-store");
    expect(await paused.json()).toEqual({ runId: "r1", paused: true });
    const view = await (await get(stub, "/admin/api/runs/r1")).json();
    expect(view).toMatchObject({ run: { state: "paused" } });

    expect(await (await post(stub, "r1/resume")).json()).toEqual({ runId: "r1", resumed: true });
    expect(await stateOf(stub)).toBe("waiting");

    const restarted = await post(stub, "r1/restart", { from: "approval" });
    expect(await restarted.json()).toEqual({ runId: "r1", restart: 1, dropped: 1 });
    expect(await stateOf(stub)).toBe("waiting");
  });

  it("change nothing without the operator's authorize, from another origin, or without a JSON body type", async () => {
    const stub = await waitingRun();
    const refusals: Array<[Record<string, string>, number]> = [
      [{ ...TOKEN, "content-type": "application/json" }, 403],
      [{ ...OPERATOR, "x-operator": "maybe" }, 403],
      [{ ...OPERATOR, origin: "https://evil.example" }, 403],
      [{ ...TOKEN, "x-operator": "yes", "content-type": "text/plain" }, 415],
      [{ ...TOKEN, "x-operator": "yes", "content-type": "application/x-www-form-urlencoded" }, 415],
      [{ "x-operator": "yes", "content-type": "application/json" }, 403],
    ];
    for (const [headers, status] of refusals) {
      const answer = await post(stub, "r1/pause", {}, headers);
      expect(answer.status, JSON.stringify(headers)).toBe(status);
      await answer.body?.cancel();
    }
    expect(await stateOf(stub)).toBe("waiting");
    // The same origin is welcome.
    const same = await post(stub, "r1/pause", {}, { ...OPERATOR, origin: "https://inspect.test" });
    expect(same.status).toBe(200);
    await same.body?.cancel();
    expect(await stateOf(stub)).toBe("paused");
  });

  it("answer bad requests with a code and the engine's refusals with its own", async () => {
    const stub = await waitingRun();
    const cases: Array<[string, unknown, number, string | undefined]> = [
      ["r1/restart", {}, 400, "inspect/invalid-argument"],
      ["r1/restart", "{not json", 400, "inspect/invalid-argument"],
      ["r1/restart", { from: "x".repeat(5_000) }, 413, "inspect/too-large"],
      ["r1/restart", { from: "never-ran" }, 404, "tasks/not-found"],
      ["nobody/restart", { from: "approval" }, 404, "tasks/not-found"],
      ["r1/delete", {}, 404, "inspect/not-found"],
      ["r1/pause/again", {}, 404, "inspect/not-found"],
      ["%E0%A4%A/pause", {}, 400, "inspect/invalid-argument"],
    ];
    for (const [path, body, status, code] of cases) {
      const answer = await post(stub, path, body);
      expect(answer.status, path).toBe(status);
      expect((await answer.json()) as unknown, path).toMatchObject({ error: { code } });
    }
    expect(await (await post(stub, "nobody/pause")).json()).toEqual({
      runId: "nobody",
      paused: false,
    });
    expect(await stateOf(stub)).toBe("waiting");
  });

  it("shows the buttons only where the host gave controls, and are off by default", async () => {
    const stub = await waitingRun();
    const withControls = await (await get(stub, "/admin/")).text();
    expect(withControls).toContain('data-controls="on"');
    const without = await (await get(stub, "/inspect/")).text();
    expect(without).not.toContain('data-controls="on"');
    const refused = await get(stub, "/inspect/api/runs/r1/pause", {
      method: "POST",
      headers: OPERATOR,
      body: "{}",
    });
    expect(refused.status).toBe(405);
    expect(refused.headers.get("allow")).toBe("GET, HEAD");
    await refused.body?.cancel();
    expect(await stateOf(stub)).toBe("waiting");
  });

  it("refuses a malformed control option when it is used", async () => {
    await runInDurableObject(freshStub(), async ({ inspector }) => {
      const request = new Request("https://inspect.test/inspect/");
      for (const control of [
        null,
        {},
        { tasks: {} },
        { tasks: { pause() {}, resume() {}, restart() {} } },
      ]) {
        await expect(
          inspectorResponse(request, inspector, {
            authorize: () => true,
            control: control as never,
          }),
        ).rejects.toMatchObject({ code: "inspect/invalid-argument" });
      }
    });
  });
});
