/**
 * Load benchmark (not a test): 50 concurrent producers append to one Durable Streams protocol stream
 * of the demo under a real `wrangler dev` while 20 SSE readers tail it. Reports appends/s, p50/p99
 * append latency, and whether every reader received every chunk exactly once, in the stream's order
 * (each reader's messages are compared with a catch-up read of the whole stream at the end).
 *
 *   node scripts/load-fanout.ts [--producers 50] [--readers 20] [--seconds 15]
 */
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startWranglerDev } from "@durablekit/wrangler-harness";

const { values } = parseArgs({
  options: {
    producers: { type: "string", default: "50" },
    readers: { type: "string", default: "20" },
    seconds: { type: "string", default: "15" },
  },
});
const PRODUCERS = Number(values.producers);
const READERS = Number(values.readers);
const SECONDS = Number(values.seconds);

interface Message {
  p: number;
  n: number;
}

/** One SSE reader: collects the messages of every `data` event until the stream closes. */
async function read(url: string, ready: () => void): Promise<Message[]> {
  const response = await fetch(`${url}?offset=-1&live=sse`);
  if (!response.ok || response.body === null) throw new Error(`reader got ${response.status}`);
  ready();
  const messages: Message[] = [];
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data = "";
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf("\n");
    while (newline !== -1) {
      const line = buffer.slice(0, newline).replace(/\r$/, "");
      buffer = buffer.slice(newline + 1);
      if (line === "") {
        if (event === "data") messages.push(...(JSON.parse(data) as Message[]));
        if (event === "control" && (JSON.parse(data) as { streamClosed?: boolean }).streamClosed) {
          return messages;
        }
        event = "";
        data = "";
      } else if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:"))
        data += (data ? "\n" : "") + line.slice(5).replace(/^ /, "");
      newline = buffer.indexOf("\n");
    }
  }
  return messages;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const dev = await startWranglerDev({
  cwd: fileURLToPath(new URL("..", import.meta.url)),
  vars: { DS_LONG_POLL_MS: "5000" },
});
try {
  const url = `${dev.url}/v1/stream/load-${Date.now()}`;
  const created = await fetch(url, {
    method: "PUT",
    headers: { "Content-Type": "application/json" },
  });
  if (created.status !== 201) throw new Error(`create answered ${created.status}`);

  const connections: Array<Promise<void>> = [];
  const readers = Array.from({ length: READERS }, () => {
    let connected = () => {};
    connections.push(new Promise<void>((resolve) => (connected = resolve)));
    return read(url, () => connected());
  });
  await Promise.all(connections);

  const latencies: number[] = [];
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  const producers = Array.from({ length: PRODUCERS }, async (_, p) => {
    for (let n = 0; performance.now() < deadline; n++) {
      const t0 = performance.now();
      const response = await fetch(url, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          "Producer-Id": `p${p}`,
          "Producer-Epoch": "0",
          "Producer-Seq": String(n),
        },
        body: JSON.stringify({ p, n }),
      });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`append answered ${response.status}`);
      latencies.push(performance.now() - t0);
    }
  });
  await Promise.all(producers);
  const elapsed = (performance.now() - started) / 1000;
  const closed = await fetch(url, { method: "POST", headers: { "Stream-Closed": "true" } });
  if (closed.status >= 300) throw new Error(`close answered ${closed.status}`);

  const all = (await (await fetch(`${url}?offset=-1`)).json()) as Message[];
  const received = await Promise.all(readers);
  const expected = JSON.stringify(all);
  const gapless = received.filter((messages) => JSON.stringify(messages) === expected).length;
  // Each producer's own messages are in order with no gap or duplicate.
  const perProducer = new Map<number, number>();
  let ordered = true;
  for (const { p, n } of all) {
    if ((perProducer.get(p) ?? -1) + 1 !== n) ordered = false;
    perProducer.set(p, n);
  }

  latencies.sort((a, b) => a - b);
  const report = {
    producers: PRODUCERS,
    readers: READERS,
    seconds: Number(elapsed.toFixed(1)),
    appends: latencies.length,
    appendsPerSecond: Math.round(latencies.length / elapsed),
    p50Ms: Math.round(percentile(latencies, 50)),
    p99Ms: Math.round(percentile(latencies, 99)),
    storedMessages: all.length,
    producersInOrder: ordered,
    readersWithEveryChunkOnceInOrder: `${gapless}/${READERS}`,
  };
  console.log(JSON.stringify(report, null, 2));
  if (all.length !== latencies.length || !ordered || gapless !== READERS) process.exitCode = 1;
} finally {
  await dev.dispose();
}
