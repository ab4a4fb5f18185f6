/**
 * The inspector's page: one HTML file, its script and its style, served from the inspector's own
 * routes under a CSP that allows nothing else (no inline script or style, no other origin, no
 * frames). The script reads the JSON views and keeps the open one live over Server-Sent Events. It
 * writes every value with `textContent`, never as HTML, so what a stream or a turn holds is shown,
 * not run.
 */

/** The Content-Security-Policy of every answer of the inspector. */
export const INSPECT_PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The page's own query string, carried on its script and style requests: re-serialized by
 * `URLSearchParams` (every character but `A–Z a–z 0–9 * - . _` is percent-encoded) with its `&`
 * written as `&amp;`, so it is safe inside the page's double-quoted attributes.
 */
function carriedQuery(params: URLSearchParams): string {
  const query = params.toString();
  return query === "" ? "" : `?${query.replaceAll("&", "&amp;")}`;
}

const HTML = (base: string, query: string, controls: boolean) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>durablekit inspector</title>
<link rel="stylesheet" href="${base}/inspect.css${query}">
<script type="module" src="${base}/inspect.js${query}"></script>
</head>
<body data-base="${base}"${controls ? ' data-controls="on"' : ""}>
<header>
  <h1><a href="#/">durablekit inspector</a></h1>
  <p id="object"></p>
  <p id="live" class="live">connecting…</p>
</header>
<main>
  <section id="list-view">
    <div id="counts"></div>
    <form id="run-filter">
      <label>state <select id="run-state">
        <option value="">any</option><option>queued</option><option>pending</option><option>running</option><option>waiting</option><option>paused</option><option>completed</option><option>failed</option><option>cancelled</option>
      </select></label>
      <label>definition <input id="run-definition" type="text" spellcheck="false"></label>
      <button type="submit">Show runs</button>
    </form>
    <table id="schedules" hidden><caption>schedules</caption><thead><tr><th>schedule</th><th>definition</th><th>cron</th><th>next tick</th><th>last tick</th><th>last run</th><th>missed</th><th>skipped</th></tr></thead><tbody></tbody></table>
    <table id="subscriptions" hidden><caption>subscriptions</caption><thead><tr><th>subscription</th><th>type</th><th>status</th><th>streams</th><th>wake</th><th>delivery</th><th>dead since</th></tr></thead><tbody></tbody></table>
    <table id="runs"><thead><tr><th>run</th><th>definition</th><th>state</th><th>attempts</th><th>created</th><th>updated</th></tr></thead><tbody></tbody></table>
    <button id="runs-more" hidden>More runs</button>
    <table id="executions" hidden><thead><tr><th>program</th><th>state</th><th>on interrupt</th><th>attempts</th><th>calls</th><th>created</th></tr></thead><tbody></tbody></table>
    <button id="executions-more" hidden>More programs</button>
    <form id="stream-filter">
      <label>state <select id="stream-state">
        <option value="">any</option><option>streaming</option><option>completed</option><option>errored</option>
      </select></label>
      <label>tag <input id="stream-tag" type="text" spellcheck="false"></label>
      <button type="submit">Show</button>
    </form>
    <table id="streams"><thead><tr><th>stream</th><th>state</th><th>chunks</th><th>encoding</th><th>tag</th><th>updated</th></tr></thead><tbody></tbody></table>
    <button id="streams-more" hidden>More</button>
    <form id="chat-form">
      <label>chat id <input id="chat-id" type="text" spellcheck="false"></label>
      <button type="submit">Show turns</button>
    </form>
    <table id="turns"><thead><tr><th>turn</th><th>message</th><th>state</th><th>writer</th><th>updated</th></tr></thead><tbody></tbody></table>
  </section>
  <section id="detail-view" hidden>
    <h2 id="detail-title"></h2>
    <dl id="detail-facts"></dl>
    <form id="detail-controls" hidden>
      <button type="button" id="control-pause">Pause</button>
      <button type="button" id="control-resume">Resume</button>
      <label>restart from <select id="control-from"></select></label>
      <button type="button" id="control-restart">Restart</button>
    </form>
    <p id="detail-life" class="life"></p>
    <div id="detail-bar" class="bar" hidden><span></span></div>
    <div id="detail-timeline" class="timeline" hidden></div>
    <table id="detail-attempts" hidden><thead><tr><th>attempt</th><th>started</th><th>after</th><th>ran</th><th>ended as</th><th>step</th><th>error</th></tr></thead><tbody></tbody></table>
    <div id="detail-journals" hidden></div>
    <table id="detail-children" hidden><thead><tr><th>step</th><th>#</th><th>child run</th><th>definition</th><th>object</th><th>state</th><th>settled</th></tr></thead><tbody></tbody></table>
    <table id="detail-restarts" hidden><caption>earlier history: the steps each restart dropped</caption><thead><tr><th>restart</th><th>from</th><th>at</th><th>step</th><th>kind</th><th>state</th><th>result or error</th></tr></thead><tbody></tbody></table>
    <table id="detail-steps" hidden><thead><tr><th>#</th><th>step</th><th>kind</th><th>state</th><th>attempts</th><th>took</th><th>wakes</th><th>result or error</th></tr></thead><tbody></tbody></table>
    <table id="detail-chunks"><thead><tr><th>#</th><th>value</th></tr></thead><tbody></tbody></table>
    <button id="detail-more" hidden>Next page</button>
  </section>
  <p id="problem" class="problem" hidden></p>
</main>
</body>
</html>
`;

const JS = `const base = document.body.dataset.base;
const $ = (id) => document.getElementById(id);
let source = null;
/**
 * The page's own query string (e.g. a token its host's authorize reads) rides on every request the
 * page makes, so what let the page in lets its calls in too.
 */
const carried = new URLSearchParams(location.search);
function carry(url) {
  const target = new URL(url, location.href);
  for (const [name, value] of carried) if (!target.searchParams.has(name)) target.searchParams.append(name, value);
  return target.pathname + target.search;
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}
function time(ms) {
  return ms === null || ms === undefined ? "" : new Date(ms).toISOString().replace("T", " ").slice(0, 23);
}
function show(problem) {
  $("problem").hidden = !problem;
  $("problem").textContent = problem || "";
}
async function api(path) {
  const response = await fetch(carry(base + "/api" + path), { headers: { accept: "application/json" } });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error((body && body.error && body.error.message) || "HTTP " + response.status);
  return body;
}
/**
 * The run controls (when the host gave them): a POST of JSON to the run's control route. The live
 * view shows what it changed.
 */
const controls = document.body.dataset.controls === "on";
let controlled = null;
async function control(action, body) {
  if (controlled === null) return;
  const response = await fetch(carry(base + "/api/runs/" + encodeURIComponent(controlled) + "/" + action), {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body || {}),
  });
  const answer = await response.json().catch(() => null);
  show(response.ok ? null : (answer && answer.error && answer.error.message) || "HTTP " + response.status);
}
if (controls) {
  $("control-pause").addEventListener("click", () => control("pause"));
  $("control-resume").addEventListener("click", () => control("resume"));
  $("control-restart").addEventListener("click", () => control("restart", { from: $("control-from").value }));
}
function renderControls(view) {
  const form = $("detail-controls");
  form.hidden = !controls;
  if (!controls) return;
  const r = view.run;
  controlled = r.runId;
  const state = r.state;
  $("control-pause").disabled = !(state === "pending" || state === "running" || state === "waiting");
  $("control-resume").disabled = state !== "paused";
  const select = $("control-from");
  const chosen = select.value;
  const names = view.steps.map((step) => step.name);
  if (select.options.length !== names.length || names.some((name, i) => select.options[i].value !== name)) {
    select.replaceChildren(...names.map((name) => { const option = el("option", name); option.value = name; return option; }));
    if (names.includes(chosen)) select.value = chosen;
  }
  $("control-restart").disabled = names.length === 0 || state === "running";
}
/**
 * Keeps one view live: its JSON arrives as "view" events whenever it changes. The server ends the
 * feed with an "end" event: for "final" (what it shows can no longer change) the page closes it and
 * reads no more; for "max-live" it opens it again. A hidden tab closes its feed until it is shown.
 */
let watching = null;
function live(path, render) {
  if (source) source.close();
  watching = { path, render };
  source = new EventSource(carry(base + "/api/live?view=" + encodeURIComponent(path)));
  const mine = source;
  source.addEventListener("open", () => { $("live").textContent = "live"; $("live").className = "live on"; });
  source.addEventListener("error", () => {
    if (mine.readyState === EventSource.CLOSED) return;
    $("live").textContent = "reconnecting…"; $("live").className = "live";
  });
  source.addEventListener("view", (event) => {
    const answer = JSON.parse(event.data);
    if (answer.status !== 200) return show(answer.body && answer.body.error ? answer.body.error.message : "gone");
    show(null);
    render(answer.body);
  });
  source.addEventListener("end", (event) => {
    const reason = (JSON.parse(event.data || "{}") || {}).reason;
    mine.close();
    if (source !== mine) return;
    if (reason === "final") {
      source = null;
      $("live").textContent = "final"; $("live").className = "live final";
    } else {
      live(path, render);
    }
  });
}
document.addEventListener("visibilitychange", () => {
  if (document.hidden && source) {
    source.close();
    source = null;
    $("live").textContent = "paused"; $("live").className = "live";
  } else if (!document.hidden && !source && watching && $("live").textContent === "paused") {
    live(watching.path, watching.render);
  }
});
function link(text, hash) {
  const a = el("a", text);
  a.href = hash;
  return a;
}
function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = document.createElement("td");
    if (cell instanceof Node) td.append(cell); else td.textContent = cell === undefined || cell === null ? "" : String(cell);
    tr.append(td);
  }
  return tr;
}

// ── list view ──
let runsNext = null;
function runQuery(cursor) {
  const params = new URLSearchParams();
  if ($("run-state").value) params.set("state", $("run-state").value);
  if ($("run-definition").value.trim()) params.set("definition", $("run-definition").value.trim());
  if (cursor) params.set("cursor", cursor);
  return "/runs" + (params.size ? "?" + params : "");
}
async function loadRuns(cursor) {
  try {
    const page = await api(runQuery(cursor));
    const body = $("runs").tBodies[0];
    if (!cursor) body.replaceChildren();
    for (const r of page.items) {
      const tr = row([link(r.runId, "#/runs/" + encodeURIComponent(r.runId)), r.definition, r.state, r.attempts, time(r.createdAt), time(r.updatedAt)]);
      tr.dataset.state = r.state;
      body.append(tr);
    }
    runsNext = page.next;
    $("runs-more").hidden = page.next === null;
    show(null);
  } catch (error) { show(error.message); }
}
let executionsNext = null;
async function loadExecutions(cursor) {
  try {
    const page = await api("/executions" + (cursor ? "?cursor=" + encodeURIComponent(cursor) : ""));
    const body = $("executions").tBodies[0];
    if (!cursor) body.replaceChildren();
    for (const x of page.items) {
      const tr = row([link(x.executionId, "#/executions/" + encodeURIComponent(x.executionId)), x.state, x.onInterrupt, x.attempts, x.callCount, time(x.createdAt)]);
      tr.dataset.state = x.state;
      body.append(tr);
    }
    executionsNext = page.next;
    $("executions-more").hidden = page.next === null;
    show(null);
  } catch (error) { show(error.message); }
}
let streamsNext = null;
function streamQuery(cursor) {
  const params = new URLSearchParams();
  if ($("stream-state").value) params.set("state", $("stream-state").value);
  if ($("stream-tag").value.trim()) params.set("tag", $("stream-tag").value.trim());
  if (cursor) params.set("cursor", cursor);
  return "/streams" + (params.size ? "?" + params : "");
}
async function loadStreams(cursor) {
  try {
    const page = await api(streamQuery(cursor));
    const body = $("streams").tBodies[0];
    if (!cursor) body.replaceChildren();
    for (const s of page.items) {
      const tr = row([link(s.streamId, "#/streams/" + encodeURIComponent(s.streamId)), s.state, s.cursor, s.encoding, s.tag, time(s.updatedAt)]);
      tr.dataset.state = s.state;
      body.append(tr);
    }
    streamsNext = page.next;
    $("streams-more").hidden = page.next === null;
    show(null);
  } catch (error) { show(error.message); }
}
async function loadTurns(chatId) {
  try {
    const page = await api("/chats/" + encodeURIComponent(chatId) + "/turns");
    const body = $("turns").tBodies[0];
    body.replaceChildren();
    for (const t of page.items) {
      body.append(row([link(t.turnId, "#/turns/" + encodeURIComponent(t.turnId)), t.messageId, t.state, t.live ? "live here" : "none", time(t.updatedAt)]));
    }
    show(null);
  } catch (error) { show(error.message); }
}
let listsLoaded = false;
function renderOverview(overview) {
  $("object").textContent = "object " + overview.objectId + " · parts: " + overview.parts.join(", ");
  const counts = $("counts");
  counts.replaceChildren();
  for (const kind of ["runs", "streams"]) {
    const part = overview[kind];
    if (!part) continue;
    const group = el("p", kind + " ", "counts " + kind);
    for (const [state, n] of Object.entries(part.byState)) {
      const capped = part.capped ? part.capped.includes(state) : !part.complete;
      const badge = el("span", state + " " + n + (capped ? "+" : ""), "count " + state);
      badge.dataset.state = state;
      group.append(badge);
    }
    counts.append(group);
  }
  if ($("executions").hidden === overview.parts.includes("programs")) {
    $("executions").hidden = !overview.parts.includes("programs");
    if (!$("executions").hidden) loadExecutions(null);
  }
  // Each list is asked for once, and only of a part the inspector reads.
  if (!listsLoaded) {
    listsLoaded = true;
    if (overview.parts.includes("tasks")) loadRuns(null);
    if (overview.parts.includes("streams")) loadStreams(null);
  }
  renderSchedules(overview.schedules || []);
  renderSubscriptions(overview.subscriptions || []);
  $("run-filter").hidden = !overview.parts.includes("tasks");
  $("runs").hidden = !overview.parts.includes("tasks");
  $("stream-filter").hidden = !overview.parts.includes("streams");
  $("streams").hidden = !overview.parts.includes("streams");
  $("chat-form").hidden = !overview.parts.includes("chat");
  $("turns").hidden = !overview.parts.includes("chat");
}

function renderSchedules(schedules) {
  const body = $("schedules").tBodies[0];
  body.replaceChildren();
  for (const x of schedules) {
    const last = x.lastRunId ? link(x.lastRunId, "#/runs/" + encodeURIComponent(x.lastRunId)) : "";
    const tr = row([x.scheduleId, x.definition, x.cron + (x.timezone === "UTC" ? "" : " (" + x.timezone + ")"), time(x.nextTickAt), time(x.lastTickAt), last, x.missed, x.skipped]);
    tr.dataset.schedule = x.scheduleId;
    body.append(tr);
  }
  $("schedules").hidden = schedules.length === 0;
}

function renderSubscriptions(subscriptions) {
  const body = $("subscriptions").tBodies[0];
  body.replaceChildren();
  for (const x of subscriptions) {
    const wake = x.wake ? "generation " + x.wake.generation + (x.wake.holder ? ", held by " + x.wake.holder : "") : "";
    const delivery = x.delivery ? x.delivery.attempts + " failed" + (x.delivery.last_error ? ": " + x.delivery.last_error : "") : "";
    const tr = row([x.id, x.type, x.status, x.streams.length, wake, delivery, x.dead_at ? time(Date.parse(x.dead_at)) : ""]);
    tr.dataset.subscription = x.id;
    tr.dataset.status = x.status;
    body.append(tr);
  }
  $("subscriptions").hidden = subscriptions.length === 0;
}

// ── detail views ──
function facts(pairs) {
  const dl = $("detail-facts");
  dl.replaceChildren();
  for (const [name, value] of pairs) {
    if (value === null || value === undefined) continue;
    const dd = el("dd");
    if (value instanceof Node) dd.append(value); else dd.textContent = String(value);
    dl.append(el("dt", name), dd);
  }
}
function bytes(n) {
  if (n < 1024) return n + " B";
  if (n < 1048576) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1048576).toFixed(1) + " MiB";
}
/** A value as text, or for one too large for the view a link to the whole, with its size. */
function valueNode(value) {
  if (value && typeof value === "object" && value.$truncated && typeof value.$truncated.path === "string") {
    const t = value.$truncated;
    const span = el("span", t.preview + "… ", "truncated");
    const a = el("a", "whole value (" + bytes(t.bytes) + ")");
    a.href = carry(base + "/api" + t.path);
    a.target = "_blank";
    a.rel = "noopener";
    span.append(a);
    return span;
  }
  return el("span", typeof value === "string" ? value : JSON.stringify(value));
}
function chunks(items, key, first) {
  const body = $("detail-chunks").tBodies[0];
  body.replaceChildren();
  items.forEach((item, index) => {
    const value = key ? item[key] : item;
    body.append(row([key ? item.seq : first + index, valueNode(value)]));
  });
}
/**
 * How long the thing has lived, in words ("created … · lived 3.2 s · closed …"); and a bar only when
 * it has an end to fill toward (an expiry): the share of its life already spent.
 */
function life(createdAt, endAt, expiresAt, ended) {
  const end = endAt || Date.now();
  const words = ["created " + time(createdAt), (endAt ? "lived " : "living for ") + duration(end - createdAt)];
  if (endAt) words.push(ended + " " + time(endAt));
  if (expiresAt) words.push("expires " + time(expiresAt));
  $("detail-life").textContent = words.join(" · ");
  const fill = $("detail-bar").firstElementChild;
  $("detail-bar").hidden = !expiresAt;
  if (expiresAt) {
    const share = Math.min(100, ((Date.now() - createdAt) / Math.max(1, expiresAt - createdAt)) * 100);
    fill.style.width = share.toFixed(1) + "%";
    $("detail-bar").title = share.toFixed(0) + "% of its time to expiry spent";
    $("detail-bar").setAttribute("aria-label", $("detail-bar").title);
  }
}
let chunkNext = 0;
function renderStream(view) {
  const s = view.stream;
  $("detail-title").textContent = "stream " + s.streamId;
  $("detail-view").dataset.state = s.state;
  facts([["state", s.state], ["chunks", s.cursor], ["encoding", s.encoding], ["content type", s.contentType], ["tag", s.tag], ["error", s.error], ["created", time(s.createdAt)], ["updated", time(s.updatedAt)], ["closed", time(s.closedAt) || null], ["expires", time(s.expiresAt) || null]]);
  life(s.createdAt, s.closedAt, s.expiresAt, "closed");
  chunks(view.chunks, "value", 0);
  chunkNext = view.next;
  $("detail-more").hidden = view.upToDate;
}
function renderTurn(view) {
  const t = view.turn;
  $("detail-title").textContent = "chat turn " + t.turnId;
  $("detail-view").dataset.state = t.state;
  facts([["chat", t.chatId], ["message", t.messageId], ["state", t.state], ["writer", t.live ? "live in this isolate" : "none"], ["stored chunks", view.storedCount], ["created", time(t.createdAt)], ["updated", time(t.updatedAt)]]);
  life(t.createdAt, t.state === "streaming" ? null : t.updatedAt, null, "ended");
  chunks(view.chunks, null, view.from || 0);
  $("detail-more").hidden = true;
}

function duration(ms) {
  if (ms < 1000) return ms + " ms";
  if (ms < 120000) return (ms / 1000).toFixed(1) + " s";
  if (ms < 7200000) return (ms / 60000).toFixed(1) + " min";
  return (ms / 3600000).toFixed(1) + " h";
}
function outcome(step) {
  if (step.error) return (step.error.code ? step.error.code + ": " : "") + step.error.message;
  if (step.result === undefined) return "";
  return valueNode(step.result);
}
/** "ran 13 ms over 638 ms" for a step whose span holds back-offs or waits, else its duration. */
function took(step) {
  const span = step.to - step.from;
  const ran = step.ranMs === undefined ? span : step.ranMs;
  return ran < span ? "ran " + duration(ran) + " over " + duration(span) : duration(span);
}
/**
 * The run's steps as bars on one time axis, from the run's creation to its settlement (or now, for
 * a live run, so the bars grow as the view updates): a bar per step, placed from the step before it
 * to its own last write, coloured by its state.
 */
function timeline(view) {
  const box = $("detail-timeline");
  box.replaceChildren();
  const start = view.run.createdAt;
  const end = Math.max(view.run.settledAt || Date.now(), ...view.steps.map((s) => s.to), start + 1);
  const axis = el("p", time(start) + " → " + time(end) + " (" + duration(end - start) + ")", "axis");
  box.append(axis);
  const place = (bar, from, to) => {
    bar.style.left = (((from - start) / (end - start)) * 100).toFixed(2) + "%";
    bar.style.width = Math.max(0.5, ((to - from) / (end - start)) * 100).toFixed(2) + "%";
  };
  // One lane of attempts: the gaps between its bars are the back-offs, sleeps and waits.
  if (view.attempts.length > 0) {
    const lane = el("div", undefined, "lane attempts");
    lane.append(el("span", "attempts", "lane-name"));
    const track = el("div", undefined, "track");
    view.attempts.forEach((a, i) => {
      const next = view.attempts[i + 1];
      const to = a.endedAt !== null ? a.endedAt : next ? next.startedAt : a.outcome === "running" ? end : a.startedAt;
      const bar = el("span", undefined, "attempt " + a.outcome);
      bar.dataset.attempt = String(a.attempt);
      bar.dataset.outcome = a.outcome;
      place(bar, a.startedAt, Math.max(to, a.startedAt));
      bar.title = "attempt " + a.attempt + ": " + a.outcome + (a.step ? " at " + a.step : "") + (a.error ? " (" + a.error.message + ")" : "");
      track.append(bar);
    });
    lane.append(track);
    box.append(lane);
  }
  for (const step of view.steps) {
    const line = el("div", undefined, "lane");
    line.append(el("span", step.name + (step.attempts > 1 ? " ×" + step.attempts : ""), "lane-name"));
    const track = el("div", undefined, "track");
    const bar = el("span", undefined, "step " + step.state);
    bar.dataset.step = step.name;
    bar.dataset.attempts = String(step.attempts);
    place(bar, step.from, step.to);
    bar.title = step.name + ": " + step.state + ", " + took(step) + (step.attempts > 1 ? ", " + step.attempts + " attempts" : "");
    // The attempts that ran within the step's span, drawn solid; the rest of it (back-offs, waits) pale.
    const span = Math.max(1, step.to - step.from);
    if (step.ranMs !== undefined && step.ranMs < step.to - step.from) {
      bar.classList.add("waited");
      view.attempts.forEach((a, i) => {
        const next = view.attempts[i + 1];
        const aEnd = a.endedAt !== null ? a.endedAt : next ? next.startedAt : step.to;
        const from = Math.max(a.startedAt, step.from);
        const to = Math.min(aEnd, step.to);
        // An attempt that ran the step within one millisecond still ran it: drawn at its least width.
        if (to < from) return;
        const ran = el("span", undefined, "ran");
        ran.style.left = (((from - step.from) / span) * 100).toFixed(2) + "%";
        ran.style.width = Math.max(0.5, ((to - from) / span) * 100).toFixed(2) + "%";
        bar.append(ran);
      });
    }
    track.append(bar);
    line.append(track);
    box.append(line);
  }
}
function renderRun(view) {
  const r = view.run;
  $("detail-title").textContent = "run " + r.runId;
  $("detail-view").dataset.state = r.state;
  const waiting = r.waitingFor ? r.waitingFor + (r.eventType ? " (" + r.eventType + ")" : "") : r.queuedFor ? r.queuedFor + (r.flowKey ? " of key " + r.flowKey : "") : null;
  facts([["definition", r.definition], ["state", r.state], ["attempts", r.attempts], ["waiting for", waiting], ["priority", r.priority], ["wakes", time(r.wakeAt) || null], ["status", r.statusMessage], ["error", r.error ? (r.error.code ? r.error.code + ": " : "") + r.error.message : null], ["idempotency key", r.idempotencyKey], ["created", time(r.createdAt)], ["started", time(r.startedAt) || null], ["settled", time(r.settledAt) || null], ["input", view.input === undefined ? null : valueNode(view.input)], ["result", "result" in view ? valueNode(view.result) : null]]);
  life(r.createdAt, r.settledAt, null, "settled");
  renderControls(view);
  timeline(view);
  const attempts = $("detail-attempts").tBodies[0];
  attempts.replaceChildren();
  view.attempts.forEach((a, i) => {
    const before = view.attempts[i - 1];
    const after = before && before.endedAt !== null ? duration(a.startedAt - before.endedAt) : "";
    const ran = a.endedAt === null ? "" : duration(a.endedAt - a.startedAt);
    const tr = row([a.attempt, time(a.startedAt), after, ran, a.outcome, a.step, a.error ? (a.error.code ? a.error.code + ": " : "") + a.error.message : ""]);
    tr.dataset.outcome = a.outcome;
    attempts.append(tr);
  });
  $("detail-attempts").hidden = view.attempts.length === 0;
  const body = $("detail-steps").tBodies[0];
  body.replaceChildren();
  for (const step of view.steps) {
    const tr = row([step.index, step.name, step.kind, step.state, step.attempts, took(step), time(step.wakeAt), outcome(step)]);
    tr.dataset.state = step.state;
    body.append(tr);
  }
  journals(view.journals);
  children(view.children || []);
  restarts(view.restarts || []);
  $("detail-chunks").hidden = true;
  $("detail-more").hidden = true;
}
/** A run's restarts: each dropped step as it was, the run's history before the restart. */
function restarts(list) {
  const body = $("detail-restarts").tBodies[0];
  body.replaceChildren();
  for (const r of list) {
    for (const step of r.steps) {
      const tr = row([r.restart, r.from, time(r.at), step.name, step.kind, step.state, outcome(step)]);
      tr.dataset.restart = String(r.restart);
      body.append(tr);
    }
  }
  $("detail-restarts").hidden = list.length === 0;
}
/** The child runs a run started: each links to its own view when it runs in this object. */
function children(list) {
  const body = $("detail-children").tBodies[0];
  body.replaceChildren();
  for (const c of list) {
    const tr = row([c.step, c.index, "", c.definition, c.target.binding + " " + c.target.id.slice(0, 12) + "…", c.state, time(c.settledAt)]);
    const cell = tr.cells[2];
    if (c.runId !== null && c.here) cell.append(link(c.runId, "#/runs/" + encodeURIComponent(c.runId)));
    else cell.textContent = c.runId === null ? "(starting)" : c.runId;
    tr.dataset.state = c.state;
    body.append(tr);
  }
  $("detail-children").hidden = list.length === 0;
}
/** A table of a program's journaled calls: where each sits, what it called, how it ended. */
function callTable(calls) {
  const table = el("table", undefined, "calls");
  const head = document.createElement("thead");
  head.append(row(["key", "module", "method", "outcome", "ran in attempt", "bytes", "returned", "error"]));
  const body = document.createElement("tbody");
  for (const c of calls) {
    const tr = row([c.key, c.module, c.method, c.outcome + (c.refused ? " (refused)" : ""), c.attempt === null ? "" : c.attempt, c.bytes, c.handles.join(", "), c.error ? (c.error.code ? c.error.code + ": " : "") + c.error.message : ""]);
    tr.dataset.outcome = c.outcome;
    body.append(tr);
  }
  table.append(head, body);
  return table;
}
function journals(list) {
  const box = $("detail-journals");
  box.replaceChildren();
  for (const journal of list) {
    const title = el("h3", "journal " + journal.name + " · ");
    title.append(link(journal.executionId, "#/executions/" + encodeURIComponent(journal.executionId)));
    box.append(title, callTable(journal.calls));
  }
  box.hidden = list.length === 0;
}
function renderExecution(view) {
  const x = view.execution;
  $("detail-title").textContent = "program " + x.executionId;
  $("detail-view").dataset.state = x.state;
  facts([["state", x.state], ["on interrupt", x.onInterrupt], ["attempts", x.attempts], ["calls", x.callCount], ["interrupted at", x.interrupt ? x.interrupt.key + " " + JSON.stringify(x.interrupt.payload) : null], ["error", x.error ? (x.error.code ? x.error.code + ": " : "") + x.error.message : null], ["unsafe call", x.unsafeCall], ["program digest", x.fingerprint ? x.fingerprint.program : null], ["created", time(x.createdAt)], ["finished", time(x.finishedAt) || null], ["result", "result" in view ? valueNode(view.result) : null]]);
  life(x.createdAt, x.finishedAt, null, "finished");
  journals(view.calls.length > 0 ? [{ name: "own", executionId: x.executionId, calls: view.calls }] : []);
  $("detail-chunks").hidden = true;
  $("detail-more").hidden = true;
}

function route() {
  const hash = location.hash.slice(1) || "/";
  const [, kind, id] = hash.split("/");
  const detail = kind === "streams" || kind === "turns" || kind === "runs" || kind === "executions";
  $("list-view").hidden = detail;
  $("detail-view").hidden = !detail;
  $("detail-timeline").hidden = kind !== "runs";
  $("detail-attempts").hidden = kind !== "runs";
  $("detail-steps").hidden = kind !== "runs";
  $("detail-chunks").hidden = kind === "runs" || kind === "executions";
  $("detail-journals").hidden = kind !== "runs" && kind !== "executions";
  $("detail-children").hidden = true;
  $("detail-restarts").hidden = true;
  $("detail-controls").hidden = true;
  controlled = null;
  if (kind === "runs" && id) {
    live("/runs/" + id, renderRun);
  } else if (kind === "executions" && id) {
    live("/executions/" + id, renderExecution);
  } else if (kind === "streams" && id) {
    chunkNext = 0;
    live("/streams/" + id + "?from=0", renderStream);
  } else if (kind === "turns" && id) {
    live("/turns/" + id, renderTurn);
  } else {
    listsLoaded = false;
    live("/overview", renderOverview);
    if (kind === "chats" && id) { $("chat-id").value = decodeURIComponent(id); loadTurns(decodeURIComponent(id)); }
  }
}

$("run-filter").addEventListener("submit", (event) => { event.preventDefault(); loadRuns(null); });
$("runs-more").addEventListener("click", () => loadRuns(runsNext));
$("executions-more").addEventListener("click", () => loadExecutions(executionsNext));
$("stream-filter").addEventListener("submit", (event) => { event.preventDefault(); loadStreams(null); });
$("streams-more").addEventListener("click", () => loadStreams(streamsNext));
$("chat-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const chatId = $("chat-id").value.trim();
  if (chatId) location.hash = "#/chats/" + encodeURIComponent(chatId);
});
$("detail-more").addEventListener("click", () => {
  const [, , id] = location.hash.slice(1).split("/");
  live("/streams/" + id + "?from=" + chunkNext, renderStream);
});
addEventListener("hashchange", route);
route();
`;

const CSS = `body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1b1b1b; background: #fafafa; }
header { padding: 12px 20px; background: #13294b; color: #fff; display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0; }
header a { color: #fff; text-decoration: none; }
header p { margin: 0; opacity: 0.85; }
main { padding: 12px 20px; }
table { border-collapse: collapse; width: 100%; margin: 10px 0 16px; background: #fff; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e4e4e4; vertical-align: top; }
td { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
[hidden] { display: none !important; }
form { display: flex; gap: 12px; align-items: center; margin: 8px 0; }
.count { display: inline-block; margin-right: 8px; padding: 2px 10px; border-radius: 12px; background: #e8eef8; }
.count.streaming { background: #dff3e4; }
.count.errored { background: #fbe3e3; }
.live { font-size: 12px; }
.live.on::before { content: "● "; color: #4caf50; }
.bar { height: 14px; background: #eee; border-radius: 7px; overflow: hidden; margin: 8px 0; max-width: 640px; }
.bar span { display: block; height: 100%; background: #3b82f6; }
#detail-view[data-state="errored"] .bar span { background: #d33; }
#detail-view[data-state="completed"] .bar span { background: #4caf50; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; }
dt { color: #555; }
dd { margin: 0; font-family: ui-monospace, monospace; }
.problem { color: #a11; }
.counts { margin: 4px 0; }
.timeline { max-width: 960px; margin: 10px 0; }
.timeline .axis { font-size: 12px; color: #555; margin: 0 0 4px; }
.lane { display: grid; grid-template-columns: 180px 1fr; align-items: center; gap: 8px; margin: 2px 0; }
.lane-name { font-family: ui-monospace, monospace; font-size: 12px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.track { position: relative; height: 14px; background: #eee; border-radius: 3px; }
.track .step { position: absolute; top: 0; height: 100%; border-radius: 3px; background: #3b82f6; }
.track .step.completed { background: #4caf50; }
.track .step.failed { background: #d33; }
.track .step.waiting { background: #f0b429; }
.track .step.waited { opacity: 0.45; }
.track .step .ran { position: absolute; top: 0; height: 100%; background: inherit; filter: brightness(0.8); border-radius: 3px; }
.life { font-size: 12px; color: #555; margin: 4px 0; }
.live.final::before { content: "■ "; color: #555; }
.truncated a { margin-left: 4px; }
.track .attempt { position: absolute; top: 0; height: 100%; border-radius: 3px; background: #3b82f6; border-left: 1px solid #fff; }
.track .attempt.completed { background: #4caf50; }
.track .attempt.failed, .track .attempt.retry { background: #d33; }
.track .attempt.sleep, .track .attempt.event { background: #f0b429; }
.track .attempt.interrupted { background: #9e9e9e; }
.lane.attempts .lane-name { font-weight: 600; }
h3 { font-size: 14px; margin: 16px 0 4px; }
table.calls tr[data-outcome="error"] td { color: #a11; }
`;

/** The page's files by their path below `basePath`. */
export function pageFiles(
  basePath: string,
  query: URLSearchParams = new URLSearchParams(),
  controls = false,
): ReadonlyMap<string, { body: string; contentType: string }> {
  const html = {
    body: HTML(basePath, carriedQuery(query), controls),
    contentType: "text/html; charset=utf-8",
  };
  return new Map([
    ["/", html],
    ["/inspect.js", { body: JS, contentType: "text/javascript; charset=utf-8" }],
    ["/inspect.css", { body: CSS, contentType: "text/css; charset=utf-8" }],
  ]);
}
