/**
 * The demo's page for a person (`GET /`): the routes, and forms that start a task, a program and a
 * chat turn and show their streams live. No framework and no external asset: the HTML, its script
 * (`/page.js`) and its style (`/page.css`) are the three strings below, served under a CSP that
 * allows only this origin's own files (no inline script or style).
 *
 * Exactly once across reloads: the page keeps every stream it watches in `localStorage` with the
 * chunks it has shown and the last event id. A reload shows the stored chunks and reconnects with
 * `?from=<last id + 1>`; an `EventSource` that reconnects by itself sends `Last-Event-ID`. A chunk
 * whose id is at or below the last one shown is never shown again.
 *
 * Programs: the page keeps each program's answer; one left running or interrupted is read again
 * from `GET /programs/:id` on the next load, and an interrupted one's card offers a Resume form
 * (`POST /programs/:id/resume` with `{ value }`).
 */

/** The Content-Security-Policy of the page and its files. */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>durablekit demo</title>
<link rel="stylesheet" href="/page.css">
<script type="module" src="/page.js"></script>
</head>
<body>
<header>
  <h1>durablekit demo</h1>
  <p>One Worker composing the durablekit packages. Start something below and watch its stream
  arrive live; reload the page at any time: each stream continues where it was, each chunk shown once.</p>
</header>
<main>
  <section id="task">
    <h2>Task → stream → this page over SSE</h2>
    <p><code>POST /tasks/demo.count@v1</code> runs <em>steps</em> durable steps; each appends
    <code>{"i": i}</code> to the stream, the last one closes it. The page reads
    <code>GET /streams/:id/sse</code> with an <code>EventSource</code>, and the run's own
    lifecycle (attempts, steps, waits, the settlement) from <code>GET /tasks/:runId/events</code>.</p>
    <form id="task-form">
      <label>steps <input id="task-steps" type="number" min="0" max="1000" value="10"></label>
      <label>stepMs <input id="task-step-ms" type="number" min="0" max="60000" value="500"></label>
      <label>stream <input id="task-stream" type="text" maxlength="256" placeholder="a new stream id (generated when empty)"></label>
      <button id="task-start" type="submit">Start demo.count@v1</button>
    </form>
    <form id="watch-form">
      <label>watch an existing stream <input id="watch-stream" type="text" maxlength="256" placeholder="stream id"></label>
      <button id="watch-start" type="submit">Watch</button>
    </form>
    <p class="answer" id="task-answer"></p>
    <div id="streams"></div>
  </section>
  <section id="program">
    <h2>Program</h2>
    <p><code>POST /programs</code> runs an ES module in an isolate against the host modules
    <code>codemode:jobs</code>, <code>codemode:approval</code> and <code>codemode:process</code>, and
    answers when it ends or is interrupted. Programs are replayable: every host call is journaled
    and never runs twice. <code>approval(reason)</code> interrupts the program until a person answers:
    its card shows the reason and a Resume form, which sends the answer to
    <code>POST /programs/:id/resume</code>; the program then runs on from its journal (a job it
    started is not started again).</p>
    <form id="program-form">
      <label>example <select id="program-example">
        <option value="jobs">a job and its run</option>
        <option value="approval">a job, an approval, then its run</option>
      </select></label>
      <textarea id="program-code" rows="9" spellcheck="false"></textarea>
      <button id="program-run" type="submit">Run program</button>
    </form>
    <div id="programs"></div>
  </section>
  <section id="chat">
    <h2>Chat turn</h2>
    <p><code>POST /chat</code> starts a turn answered word by word by a scripted local model, as a
    durable run: the server finishes it even when it restarts with no page open.
    <code>GET /chat/:chatId/stream</code> resumes it after a reload; a turn that ended while the page
    was away is shown from <code>GET /chat/:chatId/messages</code>.</p>
    <form id="chat-form">
      <label>message <input id="chat-text" type="text" value="Tell me about durable objects."></label>
      <button id="chat-send" type="submit">Send</button>
    </form>
    <div id="chats"></div>
  </section>
  <section id="fanout">
    <h2>Fan-out across objects</h2>
    <p><code>POST /fanout</code> starts a task that starts one child run per child in the shard
    objects (<code>shard-0</code> … <code>shard-99</code>), each exactly once, and awaits them all.
    Each child's settlement comes back through its shard's outbox, retried until the workspace
    acknowledges it; the card below shows the fan-in as it arrives (<code>GET /fanout/:runId</code>),
    across reloads and server restarts.</p>
    <form id="fanout-form">
      <label>children <input id="fanout-children" type="number" min="1" max="1000" value="100"></label>
      <label>objects <input id="fanout-objects" type="number" min="1" max="100" value="100"></label>
      <label>ms per child <input id="fanout-ms" type="number" min="0" max="10000" value="200"></label>
      <button id="fanout-start" type="submit">Fan out</button>
    </form>
    <p class="answer" id="fanout-answer"></p>
    <div id="fanouts"></div>
  </section>
  <section id="flow">
    <h2>One at a time, and on a schedule</h2>
    <p><code>demo.serial@v1</code> runs one run per key at a time (<code>concurrency: { limit: 1 }</code>,
    keyed by its input): start three on one key and two wait <code>queued</code>, each starting when the
    one before it settles. A schedule starts a <code>demo.tick@v1</code> run at each tick of its cron, from
    the workspace's alarm; the table shows its next tick, its latest tick and run, and the ticks it missed.</p>
    <form id="serial-form">
      <label>key <input id="serial-key" type="text" value="report"></label>
      <label>ms per run <input id="serial-ms" type="number" min="0" max="60000" value="3000"></label>
      <button id="serial-start" type="submit">Start 3 on this key</button>
    </form>
    <table id="serial-runs"><thead><tr><th>run</th><th>state</th></tr></thead><tbody></tbody></table>
    <form id="schedule-form">
      <label>schedule id <input id="schedule-id" type="text" value="every-minute"></label>
      <label>cron <input id="schedule-cron" type="text" value="* * * * *"></label>
      <button id="schedule-add" type="submit">Add schedule</button>
    </form>
    <p class="answer" id="schedule-answer"></p>
    <table id="schedules"><thead><tr><th>schedule</th><th>cron</th><th>next tick</th><th>last tick</th><th>last run</th><th>missed</th><th></th></tr></thead><tbody></tbody></table>
  </section>
  <section id="routes">
    <h2>Routes</h2>
    <table>
      <thead><tr><th>route</th><th>does</th></tr></thead>
      <tbody>
        <tr><td><code>GET /health</code></td><td>the workspace object writes and reads its SQLite</td></tr>
        <tr><td><code>POST /tasks/:definition</code></td><td><code>{ "input": { … }, "idempotencyKey"?, "runId"? }</code> starts a run: <code>demo.count@v1</code>, <code>demo.flaky@v1</code>, <code>demo.approval@v1</code>, <code>demo.program@v1</code>, <code>demo.serial@v1</code> (one per key at a time)</td></tr>
        <tr><td><code>GET /tasks/:runId</code></td><td>a run's state and journal</td></tr>
        <tr><td><code>GET /tasks/:runId/events</code></td><td>a run's events as Server-Sent Events, resumable with <code>Last-Event-ID</code></td></tr>
        <tr><td><code>POST /tasks/:runId/cancel</code></td><td>cancels a run</td></tr>
        <tr><td><code>POST /tasks/:runId/events/:type</code></td><td>delivers an event (e.g. <code>approve</code>)</td></tr>
        <tr><td><code>GET /streams/:id/sse</code></td><td>a stream as Server-Sent Events; resumes after <code>Last-Event-ID</code> or from <code>?from=N</code>; waits briefly for a stream not created yet</td></tr>
        <tr><td><code>/v1/stream/*</code></td><td>the Durable Streams HTTP protocol (create, append, read from <code>?offset=</code>, long-poll, SSE)</td></tr>
        <tr><td><code>POST /programs</code></td><td><code>{ "code", "onInterrupt"?: "replay" (default) | "fail" | "restart", "access"?, "id"? }</code> runs a program to its end or its interrupt: <code>{ executionId, state, result?, error?, interrupt? }</code>, <code>state</code> <code>"completed"</code>, <code>"failed"</code> or <code>"interrupted"</code> (then <code>interrupt</code> is <code>{ key, callId, payload }</code>); a retry with the same <code>id</code> joins the first execution</td></tr>
        <tr><td><code>POST /programs/:id/resume</code></td><td><code>{ "value": … }</code> answers the interrupted call and runs the program on from its journal; answers like <code>POST /programs</code>; 404 <code>bridge/not-found</code>, 409 <code>bridge/conflict</code> (not interrupted, or resumed already), 400 for a bad body</td></tr>
        <tr><td><code>GET /programs/:id</code></td><td>an execution's record: <code>state</code>, <code>result</code> / <code>error</code>, <code>interrupt</code> while interrupted, <code>onInterrupt</code>, <code>access</code>, <code>attempt</code>, <code>calls</code>, times; 404 <code>demo/program-not-found</code></td></tr>
        <tr><td><code>POST /chat</code></td><td>the AI SDK chat request: a new turn as a UI message stream</td></tr>
        <tr><td><code>GET /chat/:chatId/stream</code></td><td>the active turn from its start; 204 when none</td></tr>
        <tr><td><code>POST /chat/:chatId/stop</code></td><td>stops the chat's active turn, from any client</td></tr>
        <tr><td><code>GET /chat/:chatId/messages</code></td><td>the chat's history: each settled answer once</td></tr>
        <tr><td><code>POST /fanout</code></td><td><code>{ "children": 1–1000, "objects"?: 1–100, "ms"?: 0–10000, "spacingMs"?: 0–1000, "idempotencyKey"? }</code> starts a <code>demo.fanout@v1</code> run: one child run per child in the shard objects, awaited all</td></tr>
        <tr><td><code>GET /fanout/:runId</code></td><td>the fan-in so far: <code>{ state, children, started, settled, owed, result? }</code></td></tr>
        <tr><td><code>GET /schedules</code></td><td>the workspace's cron schedules: <code>{ items: [{ scheduleId, cron, nextTickAt, lastTickAt, lastRunId, missed, skipped, … }] }</code></td></tr>
        <tr><td><code>POST /schedules</code></td><td><code>{ "id", "cron", "timezone"? }</code> adds (or replaces) a schedule of <code>demo.tick@v1</code>: each tick starts one run</td></tr>
        <tr><td><code>POST /schedules/:id/delete</code></td><td>removes a schedule: <code>{ deleted }</code></td></tr>
        <tr><td><code>GET /debug/*</code></td><td>inspection routes, only with <code>DEMO_DEBUG=on</code></td></tr>
      </tbody>
    </table>
  </section>
</main>
</body>
</html>
`;

export const PAGE_CSS = `
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 980px; padding: 0 16px 48px; color: #1d232b; }
h1 { margin-bottom: 4px; }
h2 { border-bottom: 1px solid #d5dbe3; padding-bottom: 4px; margin-top: 32px; }
code { background: #f1f4f8; padding: 0 3px; border-radius: 3px; }
form { display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: end; margin: 8px 0; }
label { display: flex; flex-direction: column; font-size: 13px; color: #4a5563; }
input[type=number] { width: 90px; }
input[type=text] { min-width: 260px; }
textarea { width: 100%; font: 13px/1.4 ui-monospace, monospace; }
button { padding: 5px 12px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
td, th { text-align: left; border-bottom: 1px solid #e6eaef; padding: 4px 6px; vertical-align: top; }
.answer { font-size: 13px; color: #4a5563; min-height: 1em; }
.answer.failed { color: #a11; }
.card { border: 1px solid #d5dbe3; border-radius: 6px; padding: 8px 12px; margin: 10px 0; }
.card header { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; }
.card .title { font-weight: 600; }
.state { font-size: 12px; padding: 1px 8px; border-radius: 10px; background: #eef1f5; }
.state.live { background: #e3f4e8; color: #17612f; }
.state.done { background: #dde8fb; color: #1b4aa0; }
.state.error, .state.failed { background: #fbe3e3; color: #a11; }
.state.interrupted { background: #fbf0d9; color: #7a4d00; }
.state.completed { background: #dde8fb; color: #1b4aa0; }
.chunks { display: flex; flex-wrap: wrap; gap: 4px; list-style: none; padding: 0; margin: 8px 0 0; }
.chunk { font: 12px ui-monospace, monospace; background: #f1f4f8; border-radius: 4px; padding: 2px 6px; }
.run-events-box { margin-top: 8px; }
.run-events { font: 12px ui-monospace, monospace; margin: 4px 0 0; padding-left: 0; list-style: none; max-height: 12em; overflow: auto; }
.text { white-space: pre-wrap; margin: 8px 0 0; }
pre { font-size: 12px; background: #f6f8fa; padding: 6px; overflow-x: auto; margin: 6px 0 0; }
.remove { margin-left: auto; font-size: 12px; }
.interrupt p { margin: 8px 0 0; font-size: 13px; }
.interrupt .payload { font-weight: 600; }
.fields { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 8px 0 0; font-size: 13px; }
.fields dt { color: #4a5563; }
.fields dd { margin: 0; font: 12px ui-monospace, monospace; overflow-wrap: anywhere; }
.fields dd.error { color: #a11; }
.raw { margin: 6px 0 0; font-size: 12px; color: #4a5563; }
`;

export const PAGE_JS = `
const STORE_KEY = "durablekit-demo:v1";
const EXAMPLES = {
  jobs: [
    'import { createJob } from "codemode:jobs";',
    "export default async function () {",
    '  const job = await createJob({ name: "build" });',
    "  const run = await job.start({ durationMs: 300 });",
    "  return { job: await job.info(), run: await run.wait() };",
    "}",
  ].join("\\n"),
  // Interrupted at approval(); the resume's value is its answer. start() is journaled, so the
  // resumed program waits on the run it started before the interrupt.
  approval: [
    'import { createJob } from "codemode:jobs";',
    'import { approval } from "codemode:approval";',
    "export default async function () {",
    '  const job = await createJob({ name: "release" });',
    "  const run = await job.start({ durationMs: 300 });",
    '  const answer = await approval("ship the release?");',
    "  if (answer !== true) return { shipped: false, answer };",
    "  return { shipped: true, run: await run.wait() };",
    "}",
  ].join("\\n"),
};

// ── Saved state ──
// { streams: [{ streamId, runId, lastId, chunks: [{ seq, data }], state }],
//   programs: [{ executionId, answer }], chats: [{ chatId, text, count, state }] }
function load() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORE_KEY) || "null");
    if (saved && Array.isArray(saved.streams)) return saved;
  } catch {}
  return { streams: [], programs: [], chats: [] };
}
const saved = load();
saved.programs = saved.programs || [];
saved.chats = saved.chats || [];
saved.fanouts = saved.fanouts || [];
function save() {
  localStorage.setItem(STORE_KEY, JSON.stringify(saved));
}

function el(tag, props, children) {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  for (const child of children || []) node.append(child);
  return node;
}
function setAnswer(node, text, failed) {
  node.textContent = text;
  node.classList.toggle("failed", Boolean(failed));
}
async function postJson(path, body, headers) {
  const response = await fetch(path, {
    method: "POST",
    headers: Object.assign({ "Content-Type": "application/json" }, headers || {}),
    body: JSON.stringify(body),
  });
  return response;
}
function describeError(body, status) {
  const error = body && body.error;
  return error ? status + " " + error.code + ": " + error.message : "HTTP " + status;
}
function newId(prefix) {
  return prefix + "-" + Math.random().toString(36).slice(2, 10);
}

// ── Links to the inspector ──
// The inspector answers only with DEMO_DEBUG=on. The server says so in the page's markup
// (<body data-inspector="on">), so the page never asks a route that is off.
const inspectorOn = document.body.dataset.inspector === "on";
/** A link to a view of the inspector, shown only when the inspector is on. */
function inspectLink(href) {
  return el("a", { className: "inspect", href, textContent: "inspect", hidden: !inspectorOn });
}

// ── Streams (EventSource) ──
const views = new Map();

/** Shows one watched stream and keeps its EventSource; chunks are shown once, in seq order. */
function watch(entry) {
  const list = el("ul", { className: "chunks" });
  const state = el("span", { className: "state" });
  const remove = el("button", { className: "remove", type: "button", textContent: "forget" });
  const title = el("span", { className: "title", textContent: "stream " + entry.streamId });
  const run = el("span", { textContent: entry.runId ? "run " + entry.runId : "" });
  const header = el("header", {}, [title, run]);
  if (entry.runId) header.append(inspectLink("/inspect/#/runs/" + encodeURIComponent(entry.runId)));
  header.append(state, remove);
  const card = el("div", { className: "card stream" }, [header, list]);
  card.dataset.stream = entry.streamId;
  document.getElementById("streams").prepend(card);
  const view = { entry, list, state, source: null, events: null };
  views.set(entry.streamId, view);
  for (const chunk of entry.chunks) showChunk(view, chunk);
  if (entry.runId) view.events = followRun(entry, card);
  remove.addEventListener("click", () => {
    if (view.source) view.source.close();
    if (view.events) view.events.close();
    views.delete(entry.streamId);
    saved.streams = saved.streams.filter((item) => item !== entry);
    save();
    card.remove();
  });
  if (entry.state === "done" || entry.state === "error") setState(view, entry.state, entry.note);
  else connect(view);
}

function showChunk(view, chunk) {
  const item = el("li", { className: "chunk", textContent: "#" + chunk.seq + " " + chunk.data });
  item.dataset.seq = String(chunk.seq);
  view.list.append(item);
}

/**
 * Shows a stream's state. Only the stream's own ends (done, error) are saved: a connection that
 * failed (a refusal, or the page going away) is retried by the next page load.
 */
function setState(view, state, note) {
  view.state.className = "state " + state;
  view.state.textContent = note ? state + ": " + note : state;
  view.state.dataset.state = state;
  if (state !== "done" && state !== "error") return;
  view.entry.state = state;
  view.entry.note = note || "";
  save();
}

function connect(view) {
  const entry = view.entry;
  // A fresh page resumes from the route's query parameter; the EventSource itself then sends
  // Last-Event-ID on every reconnect (the header wins over ?from on the server).
  const from = entry.lastId === null ? "" : "?from=" + (entry.lastId + 1);
  const source = new EventSource("/streams/" + encodeURIComponent(entry.streamId) + "/sse" + from);
  view.source = source;
  setState(view, "connecting");
  source.addEventListener("message", (event) => {
    const seq = Number(event.lastEventId);
    if (!Number.isInteger(seq) || (entry.lastId !== null && seq <= entry.lastId)) return;
    const chunk = { seq, data: event.data };
    entry.chunks.push(chunk);
    entry.lastId = seq;
    save();
    showChunk(view, chunk);
  });
  source.addEventListener("up-to-date", () => setState(view, "live"));
  source.addEventListener("done", () => {
    source.close();
    setState(view, "done");
  });
  source.addEventListener("error", (event) => {
    if (event.data) {
      // The stream's own end: errored, deleted or expired.
      source.close();
      let reason = event.data;
      try {
        reason = JSON.parse(event.data).reason || reason;
      } catch {}
      setState(view, "error", String(reason));
    } else if (source.readyState === EventSource.CLOSED) {
      // A refusal (e.g. 404 once the server's wait for the stream passed): EventSource stops.
      setState(view, "refused", "no such stream yet; reload to try again");
    } else {
      setState(view, "reconnecting");
    }
  });
}

// ── A run's events (EventSource over GET /tasks/:runId/events) ──

/** One line of a run's event: its number, type and what it names. */
function eventText(event) {
  const type = String(event.type || "").replace(/^task:/, "");
  const detail = event.step ? " " + event.step : event.attempt !== undefined ? " #" + event.attempt : "";
  return "#" + event.seq + " " + type + detail;
}

/**
 * Follows a run's lifecycle under its stream's card: the events are kept with the entry, shown
 * once each in order, and a reload resumes after the last one (?from=, then Last-Event-ID).
 */
function followRun(entry, card) {
  entry.events = entry.events || [];
  if (entry.eventsLastId === undefined) entry.eventsLastId = null;
  const list = el("ol", { className: "run-events" });
  const state = el("span", { className: "state" });
  card.append(el("details", { className: "run-events-box", open: true }, [
    el("summary", {}, [el("span", { textContent: "run events " }), state]),
    list,
  ]));
  const show = (event) => {
    const item = el("li", { className: "run-event", textContent: eventText(event) });
    item.dataset.seq = String(event.seq);
    item.dataset.type = event.type;
    list.append(item);
  };
  const mark = (name) => {
    state.className = "state " + name;
    state.textContent = name;
    state.dataset.state = name;
  };
  for (const event of entry.events) show(event);
  if (entry.eventsDone) {
    mark("done");
    return null;
  }
  const from = entry.eventsLastId === null ? "" : "?from=" + (entry.eventsLastId + 1);
  const source = new EventSource("/tasks/" + encodeURIComponent(entry.runId) + "/events" + from);
  mark("connecting");
  source.addEventListener("message", (message) => {
    const seq = Number(message.lastEventId);
    if (!Number.isInteger(seq) || (entry.eventsLastId !== null && seq <= entry.eventsLastId)) return;
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      return;
    }
    entry.events.push(event);
    entry.eventsLastId = seq;
    save();
    show(event);
  });
  source.addEventListener("up-to-date", () => mark("live"));
  source.addEventListener("done", () => {
    source.close();
    entry.eventsDone = true;
    save();
    mark("done");
  });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) mark("refused");
    else mark("reconnecting");
  });
  return source;
}

function startWatching(streamId, runId) {
  const known = views.get(streamId);
  if (known) return known;
  const entry = { streamId, runId: runId || null, lastId: null, chunks: [], state: "connecting" };
  saved.streams.push(entry);
  save();
  watch(entry);
  return views.get(streamId);
}

document.getElementById("task-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = document.getElementById("task-answer");
  const streamId = document.getElementById("task-stream").value.trim() || newId("page");
  const input = {
    steps: Number(document.getElementById("task-steps").value),
    stepMs: Number(document.getElementById("task-step-ms").value),
    stream: streamId,
  };
  setAnswer(answer, "starting…");
  const response = await postJson("/tasks/demo.count@v1", { input });
  const body = await response.json().catch(() => null);
  if (!response.ok) return setAnswer(answer, describeError(body, response.status), true);
  // The run's state belongs to its card (the stream's own state), not to this line.
  setAnswer(answer, (body.accepted ? "started run " : "joined run ") + body.runId + " (HTTP " + response.status + "); its stream is below");
  document.getElementById("task-stream").value = "";
  rememberForm();
  startWatching(streamId, body.runId);
});

document.getElementById("watch-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const streamId = document.getElementById("watch-stream").value.trim();
  if (streamId) startWatching(streamId, null);
});

// ── Programs ──
// A saved answer is "running…" (no answer yet), an error line, or the execution as the server
// answered it ({ state, result?, error?, interrupt? }, or GET /programs/:id's record).

/** An answer the server may still change: no answer yet, running, or waiting for a resume. */
function unsettled(answer) {
  return answer === "running…" || (answer !== null && typeof answer === "object" && (answer.state === "running" || answer.state === "interrupted"));
}

/** Shows one program's card; its view re-renders the card whenever the saved answer changes. */
function showProgram(record) {
  const state = el("span", { className: "state" });
  const fields = el("dl", { className: "fields" });
  const result = el("pre", { className: "result" });
  const raw = el("details", { className: "raw" }, [el("summary", { textContent: "JSON" }), result]);
  const interrupt = el("div", { className: "interrupt" });
  const card = el("div", { className: "card program" }, [
    el("header", {}, [el("span", { className: "title", textContent: "execution " + record.executionId }), state]),
    fields,
    interrupt,
    raw,
  ]);
  card.dataset.execution = record.executionId;
  document.getElementById("programs").prepend(card);
  const view = { record, state, fields, result, interrupt };
  renderProgram(view);
  return view;
}

function setProgramAnswer(view, answer) {
  view.record.answer = answer;
  save();
  renderProgram(view);
}

function renderProgram(view) {
  const answer = view.record.answer;
  const state = answer === "running…" ? "running" : typeof answer === "string" ? "error" : String(answer && answer.state);
  view.state.className = "state " + state;
  view.state.textContent = state;
  view.state.dataset.state = state;
  view.result.textContent = JSON.stringify(answer, null, 2);
  view.fields.replaceChildren(...programFields(answer));
  // The same interrupt read again (a reload's refresh) keeps its form: what the user typed and
  // the form's last note stay. A different interrupt, or none, replaces it.
  const shown = state === "interrupted" && answer.interrupt ? answer.interrupt.key + "#" + answer.interrupt.callId : null;
  if (shown !== null && shown === view.shownInterrupt) return;
  view.shownInterrupt = shown;
  view.interrupt.replaceChildren();
  if (shown !== null) view.interrupt.append(...resumeForm(view, answer.interrupt));
}

/** An answer's readable fields: its result or its error (the state is the card's badge). */
function programFields(answer) {
  const row = (name, text, className) => [el("dt", { textContent: name }), el("dd", { className, textContent: text })];
  if (typeof answer === "string") return answer === "running…" ? [] : row("error", answer, "error");
  if (answer === null || typeof answer !== "object") return [];
  if (answer.state === "completed") return row("result", JSON.stringify(answer.result), "value");
  if (answer.state === "failed" && answer.error) {
    const error = answer.error;
    return row("error", (error.code ? error.code + ": " : "") + (error.message || JSON.stringify(error)), "error");
  }
  return [];
}

/** What an interrupt asks, readably: its reason when it has one, else its payload as JSON. */
function askedFor(payload) {
  return payload && typeof payload.reason === "string" ? payload.reason : JSON.stringify(payload);
}

/** The interrupt's question and a form that answers it: POST /programs/:id/resume with { value }. */
function resumeForm(view, interrupt) {
  const payload = el("p", { className: "payload", textContent: askedFor(interrupt.payload) });
  const value = el("input", { className: "resume-value", type: "text", value: "true", spellcheck: false });
  const button = el("button", { className: "resume", type: "submit", textContent: "Resume" });
  const note = el("p", { className: "answer" });
  const form = el("form", { className: "resume-form" }, [el("label", { textContent: "value (JSON)" }, [value]), button]);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let parsed;
    try {
      parsed = JSON.parse(value.value);
    } catch {
      return setAnswer(note, "the value is not JSON: " + value.value, true);
    }
    button.disabled = true;
    setAnswer(note, "resuming…");
    const path = "/programs/" + encodeURIComponent(view.record.executionId) + "/resume";
    const response = await postJson(path, { value: parsed }).catch(() => null);
    button.disabled = false;
    // No answer: the saved answer stays interrupted, and the next page load asks how it is.
    if (response === null) return setAnswer(note, "no answer; reload to see how it is", true);
    const body = await response.json().catch(() => null);
    if (!response.ok) return setAnswer(note, describeError(body, response.status), true);
    setProgramAnswer(view, body);
  });
  return [el("p", { textContent: "waiting for an answer to:" }), payload, form, note];
}

const programExample = document.getElementById("program-example");
programExample.value = "jobs";
document.getElementById("program-code").value = EXAMPLES.jobs;
programExample.addEventListener("change", () => {
  document.getElementById("program-code").value = EXAMPLES[programExample.value];
});
document.getElementById("program-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const executionId = newId("page-program");
  const record = { executionId, answer: "running…" };
  saved.programs.push(record);
  save();
  const view = showProgram(record);
  // The id makes a retry after a reload join the same execution.
  const response = await postJson("/programs", { code: document.getElementById("program-code").value, id: executionId }).catch(() => null);
  // No answer (the page or the connection went away): the next page load asks how it ended.
  if (response === null) return;
  const body = await response.json().catch(() => null);
  setProgramAnswer(view, response.ok ? body : describeError(body, response.status));
});

async function refreshProgram(record) {
  const view = showProgram(record);
  if (!unsettled(record.answer)) return;
  // Running when the page went away, or interrupted (and maybe resumed since): read how it is.
  const response = await fetch("/programs/" + encodeURIComponent(record.executionId)).catch(() => null);
  if (response === null) return;
  const body = await response.json().catch(() => null);
  setProgramAnswer(view, response.ok ? body : describeError(body, response.status));
}

// ── Chat ──
function showChat(chat) {
  const text = el("p", { className: "text", textContent: chat.text });
  const state = el("span", { className: "state" });
  const id = encodeURIComponent(chat.chatId);
  const turns = inspectLink("/chat/" + id + "/inspect/#/chats/" + id);
  const card = el("div", { className: "card chat" }, [
    el("header", {}, [el("span", { className: "title", textContent: "chat " + chat.chatId }), turns, state]),
    text,
  ]);
  document.getElementById("chats").prepend(card);
  return { text, state };
}

function setChatState(chat, view, state) {
  chat.state = state;
  view.state.className = "state " + state;
  view.state.textContent = state;
  save();
}

/** Reads a UI message stream (SSE data lines); skips the first chat.count chunks, shown already. */
async function readTurn(chat, view, response) {
  setChatState(chat, view, "live");
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let index = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffer += value;
    let end = buffer.indexOf("\\n\\n");
    while (end !== -1) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf("\\n\\n");
      const data = frame.split("\\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim()).join("\\n");
      if (!data || data === "[DONE]") continue;
      index += 1;
      if (index <= chat.count) continue;
      chat.count = index;
      const chunk = JSON.parse(data);
      if (chunk.type === "text-delta") chat.text += chunk.delta;
      if (chunk.type === "error") chat.text += " [error: " + chunk.errorText + "]";
      view.text.textContent = chat.text;
      save();
    }
  }
  setChatState(chat, view, "done");
}

document.getElementById("chat-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const chat = { chatId: newId("page-chat"), text: "", count: 0, state: "connecting" };
  saved.chats.push(chat);
  save();
  const view = showChat(chat);
  const message = { id: newId("user"), role: "user", parts: [{ type: "text", text: document.getElementById("chat-text").value }] };
  const response = await postJson("/chat", { id: chat.chatId, messages: [message], trigger: "submit-message" });
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    chat.text = describeError(body, response.status);
    view.text.textContent = chat.text;
    return setChatState(chat, view, "error");
  }
  await readTurn(chat, view, response).catch(() => setChatState(chat, view, "interrupted"));
});

async function resumeChat(chat) {
  const view = showChat(chat);
  setChatState(chat, view, chat.state);
  if (chat.state === "done" || chat.state === "error") return;
  const response = await fetch("/chat/" + encodeURIComponent(chat.chatId) + "/stream");
  if (response.status === 204) return showSettledAnswer(chat, view);
  // A dropped connection leaves the turn to the next page load, which resumes it.
  await readTurn(chat, view, response).catch(() => setChatState(chat, view, "interrupted"));
}

/**
 * The turn ended while this page was away (the server finished it, also after a restart): its
 * answer is in the chat's history, as the AI SDK app would load it.
 */
async function showSettledAnswer(chat, view) {
  const response = await fetch("/chat/" + encodeURIComponent(chat.chatId) + "/messages");
  const body = response.ok ? await response.json().catch(() => null) : null;
  const answer = body?.messages?.filter((message) => message.role === "assistant").at(-1);
  if (!answer) return setChatState(chat, view, "ended while away");
  chat.text = answer.parts.filter((part) => part.type === "text").map((part) => part.text).join("");
  view.text.textContent = chat.text;
  setChatState(chat, view, "done");
}

// ── Fan-out ──
// A saved fan-out is its run id; its card polls GET /fanout/:runId until the run settled.

function showFanout(runId) {
  const state = el("span", { className: "state" });
  const progress = el("p", { className: "text" });
  const bar = el("progress", { max: 1, value: 0 });
  const card = el("div", { className: "card fanout" }, [
    el("header", {}, [el("span", { className: "title", textContent: "fan-out " + runId }), state, inspectLink("/inspect/#/runs/" + encodeURIComponent(runId))]),
    bar,
    progress,
  ]);
  card.dataset.run = runId;
  document.getElementById("fanouts").prepend(card);
  return { runId, state, progress, bar };
}

async function followFanout(runId) {
  const view = showFanout(runId);
  for (;;) {
    const response = await fetch("/fanout/" + encodeURIComponent(runId)).catch(() => null);
    const body = response && response.ok ? await response.json().catch(() => null) : null;
    if (body) {
      view.state.textContent = body.state;
      view.state.className = "state " + (body.state === "completed" ? "completed" : body.state === "failed" ? "failed" : "live");
      view.bar.max = body.children;
      view.bar.value = body.settled;
      let text = "started " + body.started + " of " + body.children + " children · settled " + body.settled;
      if (body.result) {
        const sum = body.result.squares.reduce((total, square) => total + (square ?? 0), 0);
        text += " · sum of squares " + sum + " · not completed " + body.result.notCompleted;
      }
      view.progress.textContent = text;
      if (["completed", "failed", "cancelled"].includes(body.state)) return;
    } else if (response && response.status === 404) {
      view.state.textContent = "unknown";
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

document.getElementById("fanout-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = document.getElementById("fanout-answer");
  const body = {
    children: Number(document.getElementById("fanout-children").value),
    objects: Number(document.getElementById("fanout-objects").value),
    ms: Number(document.getElementById("fanout-ms").value),
  };
  setAnswer(answer, "starting…");
  const response = await postJson("/fanout", body);
  const started = await response.json().catch(() => null);
  if (!response.ok) return setAnswer(answer, describeError(started, response.status), true);
  setAnswer(answer, response.status + " " + JSON.stringify(started));
  saved.fanouts.push(started.runId);
  save();
  followFanout(started.runId);
});

// ── One at a time, and on a schedule ──
// Serial runs are polled until they settle; the schedules table is read every 5 s.

async function followSerial(runId) {
  const tr = el("tr", {}, [el("td", {}, [runId + " ", inspectLink("/inspect/#/runs/" + encodeURIComponent(runId))]), el("td", { className: "state" })]);
  tr.dataset.run = runId;
  document.getElementById("serial-runs").tBodies[0].append(tr);
  for (;;) {
    const response = await fetch("/tasks/" + encodeURIComponent(runId)).catch(() => null);
    const body = response && response.ok ? await response.json().catch(() => null) : null;
    if (body) {
      tr.lastChild.textContent = body.state + (body.state === "queued" ? " (" + body.reason + ")" : "");
      tr.dataset.state = body.state;
      if (["completed", "failed", "cancelled"].includes(body.state)) return;
    } else if (response && response.status === 404) return;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

document.getElementById("serial-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = document.getElementById("serial-key").value;
  const ms = Number(document.getElementById("serial-ms").value);
  for (let i = 0; i < 3; i++) {
    const response = await postJson("/tasks/demo.serial@v1", { input: { key, ms } });
    const started = await response.json().catch(() => null);
    if (!response.ok) return setAnswer(document.getElementById("schedule-answer"), describeError(started, response.status), true);
    followSerial(started.runId);
  }
});

function when(ms) {
  return ms === null || ms === undefined ? "" : new Date(ms).toLocaleTimeString();
}
async function refreshSchedules() {
  const response = await fetch("/schedules").catch(() => null);
  const body = response && response.ok ? await response.json().catch(() => null) : null;
  if (!body) return;
  const rows = body.items.map((x) => {
    const remove = el("button", { type: "button", textContent: "Remove" });
    remove.addEventListener("click", async () => {
      await postJson("/schedules/" + encodeURIComponent(x.scheduleId) + "/delete", {});
      refreshSchedules();
    });
    const last = x.lastRunId ? el("span", {}, [x.lastRunId + " ", inspectLink("/inspect/#/runs/" + encodeURIComponent(x.lastRunId))]) : el("span");
    const tr = el("tr", {}, [x.scheduleId, x.cron, when(x.nextTickAt), when(x.lastTickAt)].map((text) => el("td", { textContent: String(text) })));
    tr.append(el("td", {}, [last]), el("td", { textContent: String(x.missed) }), el("td", {}, [remove]));
    tr.dataset.schedule = x.scheduleId;
    return tr;
  });
  document.getElementById("schedules").tBodies[0].replaceChildren(...rows);
}

document.getElementById("schedule-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = document.getElementById("schedule-answer");
  const body = { id: document.getElementById("schedule-id").value, cron: document.getElementById("schedule-cron").value };
  const response = await postJson("/schedules", body);
  const added = await response.json().catch(() => null);
  if (!response.ok) return setAnswer(answer, describeError(added, response.status), true);
  setAnswer(answer, "next tick " + when(added.nextTickAt));
  refreshSchedules();
});
refreshSchedules();
setInterval(refreshSchedules, 5000);

// ── Form values ──
// What a person typed into the forms is kept with the rest, so a reload keeps it.
const FORM_FIELDS = ["task-steps", "task-step-ms", "task-stream", "watch-stream", "program-example", "program-code", "chat-text", "fanout-children", "fanout-objects", "fanout-ms"];
saved.form = saved.form || {};
function rememberForm() {
  for (const id of FORM_FIELDS) saved.form[id] = document.getElementById(id).value;
  save();
}
for (const id of FORM_FIELDS) {
  const field = document.getElementById(id);
  if (typeof saved.form[id] === "string") field.value = saved.form[id];
  field.addEventListener("input", rememberForm);
  field.addEventListener("change", rememberForm);
}

// ── Start: everything saved continues where it was ──
for (const runId of saved.fanouts) followFanout(runId);
for (const entry of saved.streams) watch(entry);
for (const record of saved.programs) refreshProgram(record);
for (const chat of saved.chats) resumeChat(chat);
`;
