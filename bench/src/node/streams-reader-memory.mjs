// Heap cost of readers parked on a live stream, measured on V8 in Node.js because workerd reports
// no heap figures (process.memoryUsage() and v8.getHeapStatistics() return zeros there). Both the
// built @durablekit/streams and agents/streams from agents@0.32.0 (as installed for the bench) run
// the same way: over the same SQLite (node:sqlite) behind the small slice of the Durable Object
// storage API they use, with 1,000 readers each parked on the live tail of one stream.
//
//   pnpm --filter @durablekit/bench bench:readers   (after `pnpm build`)
import { readdirSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";

const READERS = 1_000;
const ROUNDS = 5;

if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc");

/** The slice of DurableObjectStorage both implementations use, over node:sqlite. */
function storageOver(db) {
  const statements = new Map();
  const kv = new Map();
  const prepare = (query) => {
    let statement = statements.get(query);
    if (statement === undefined) {
      statement = db.prepare(query);
      statements.set(query, statement);
    }
    return statement;
  };
  const cursor = (rows, rowsWritten) => ({
    rowsWritten,
    rowsRead: rows.length,
    toArray: () => rows,
    one: () => {
      if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
      return rows[0];
    },
    raw: () => rows.map((row) => Object.values(row))[Symbol.iterator](),
    [Symbol.iterator]: () => rows[Symbol.iterator](),
  });
  const sql = {
    exec(query, ...params) {
      const statement = prepare(query);
      const bound = params.map((p) => (p instanceof ArrayBuffer ? new Uint8Array(p) : p));
      if (/^\s*(SELECT|WITH|EXPLAIN)/i.test(query) || /\bRETURNING\b/i.test(query)) {
        return cursor(statement.all(...bound), 0);
      }
      return cursor([], Number(statement.run(...bound).changes));
    },
    get databaseSize() {
      return 0;
    },
  };
  let depth = 0;
  return {
    sql,
    transactionSync(fn) {
      const name = `sp${depth++}`;
      db.exec(`SAVEPOINT ${name}`);
      try {
        const result = fn();
        db.exec(`RELEASE ${name}`);
        return result;
      } catch (error) {
        db.exec(`ROLLBACK TO ${name}`);
        db.exec(`RELEASE ${name}`);
        throw error;
      } finally {
        depth--;
      }
    },
    get: async (key) => kv.get(key),
    put: async (key, value) => {
      kv.set(key, value);
    },
  };
}

async function ours() {
  const { Streams } = await import("@durablekit/streams");
  const streams = new Streams({ storage: storageOver(new DatabaseSync(":memory:")) });
  return {
    open: async (id) => streams.open(id),
    readBatches: (id, options) => streams.readBatches(id, options),
    parked: () => streams.waitStats().readers,
  };
}

async function anchor() {
  const dist = new URL("../../node_modules/agents/dist/", import.meta.url);
  const chunk = readdirSync(dist).find((f) => /^capability-[\w-]+\.js$/.test(f));
  // agents/streams is a Lifecycle capability; bind it the services it reads (storage, events,
  // ready) directly, as Lifecycle.use() would, since Lifecycle itself needs cloudflare:workers.
  const { n: bindLifecycleCapability } = await import(new URL(chunk, dist));
  const { Streams } = await import(new URL("streams/index.js", dist));
  const streams = new Streams();
  bindLifecycleCapability(streams, {
    storage: storageOver(new DatabaseSync(":memory:")),
    events: { emit() {} },
    ready: async () => {},
  });
  await streams.onStart();
  return {
    open: (id) => streams.open(id),
    readBatches: (id, options) => streams.readBatches(id, options),
    parked: () => null,
  };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

async function heap() {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await settle();
  }
  return process.memoryUsage().heapUsed;
}

/** Heap bytes per parked reader: 1,000 readers, each with its AbortController and pending next(). */
async function measure(side, round) {
  const id = `s${round}`;
  const writer = await side.open(id);
  writer.append({ first: true });
  const held = { controllers: [], iterators: [], pending: [] };
  const before = await heap();
  for (let i = 0; i < READERS; i++) {
    const controller = new AbortController();
    const iterator = side.readBatches(id, { signal: controller.signal })[Symbol.asyncIterator]();
    await iterator.next();
    held.controllers.push(controller);
    held.iterators.push(iterator);
    held.pending.push(iterator.next());
  }
  await settle();
  const after = await heap();
  const parked = side.parked();
  if (parked !== null && parked !== READERS) throw new Error(`${parked} readers parked`);
  writer.append({ second: true });
  const woken = await Promise.all(held.pending);
  if (woken.some((r) => r.done)) throw new Error("a parked reader ended");
  for (const c of held.controllers) c.abort();
  await Promise.all(held.iterators.map((it) => it.next().catch(() => undefined)));
  writer.close();
  return (after - before) / READERS;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sides = {
  "@durablekit/streams": await ours(),
  "agents@0.32.0 agents/streams": await anchor(),
};
const results = {};
for (const [name, side] of Object.entries(sides)) {
  const samples = [];
  await measure(side, -1); // warm-up
  for (let round = 0; round < ROUNDS; round++) samples.push(await measure(side, round));
  results[name] = median(samples);
}
console.log(
  `heap per parked reader, median of ${ROUNDS} (node ${process.version}, ${READERS} readers):`,
);
for (const [name, bytes] of Object.entries(results)) {
  console.log(
    `  ${name}: ${Math.round(bytes)} bytes/reader, ${((bytes * READERS) / 1024).toFixed(0)} KiB per ${READERS} readers`,
  );
}
