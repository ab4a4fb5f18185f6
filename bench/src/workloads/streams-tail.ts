import { Streams } from "@durablekit/streams";
import type { Workload } from "../workload";
import { ANCHOR_NAME, chunks, startAnchor } from "./streams-shared";

const ROUNDS = 1_000;
const READERS = 1_000;

interface Tailable {
  open(id: string):
    | { append(chunk: { i: number; text: string }): number; close(): unknown }
    | Promise<{
        append(chunk: { i: number; text: string }): number;
        close(): unknown;
      }>;
  readBatches(id: string, options?: { signal?: AbortSignal }): AsyncIterable<unknown[]>;
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * Live-tail figures for one implementation, all in one object:
 * - round trip: append one chunk, then wait until a parked reader has it, 1,000 times;
 * - wake: the round trip minus the same 1,000 appends made with no reader;
 * - 1,000 parked readers: how long parking them takes, and how long one append takes to reach all.
 */
async function tail(streams: Tailable): Promise<Record<string, number>> {
  const data = chunks(ROUNDS + 1);

  const alone = await streams.open("alone");
  let start = performance.now();
  for (let i = 0; i < ROUNDS; i++) alone.append(data[i]!);
  const appendsMs = performance.now() - start;

  const writer = await streams.open("tail");
  let arrived: (() => void) | undefined;
  const reading = (async () => {
    for await (const _batch of streams.readBatches("tail")) arrived?.();
  })();
  await tick();
  start = performance.now();
  for (let i = 0; i < ROUNDS; i++) {
    const got = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    writer.append(data[i]!);
    await got;
  }
  const roundTripMs = performance.now() - start;
  writer.close();
  await reading;

  const fan = await streams.open("fan");
  fan.append(data[0]!);
  const controllers = Array.from({ length: READERS }, () => new AbortController());
  start = performance.now();
  const iterators = controllers.map((c) =>
    streams.readBatches("fan", { signal: c.signal })[Symbol.asyncIterator](),
  );
  await Promise.all(iterators.map((it) => it.next()));
  const parked = iterators.map((it) => it.next());
  await tick();
  const parkMs = performance.now() - start;
  start = performance.now();
  fan.append(data[1]!);
  const woken = await Promise.all(parked);
  const fanOutMs = performance.now() - start;
  if (woken.some((r) => r.done))
    throw new Error("a parked reader ended instead of receiving the append");
  for (const c of controllers) c.abort();
  await Promise.all(iterators.map((it) => it.next().catch(() => undefined)));
  fan.close();

  return {
    roundTripUs: (roundTripMs * 1000) / ROUNDS,
    wakeUs: (Math.max(0, roundTripMs - appendsMs) * 1000) / ROUNDS,
    parkMs,
    fanOutMs,
  };
}

/** Append→reader wake latency, and 1,000 readers parked on one live stream. */
export const streamsTail: Workload = {
  name: "streams-tail",
  title: `live tail: append→reader wake (${ROUNDS.toLocaleString("en")} rounds) and ${READERS.toLocaleString("en")} parked readers`,
  metrics: [
    {
      key: "roundTripUs",
      label: "append→parked reader has it (round trip)",
      unit: "µs",
      better: "lower",
    },
    { key: "wakeUs", label: "wake part (round trip − append alone)", unit: "µs", better: "lower" },
    {
      key: "parkMs",
      label: `park ${READERS.toLocaleString("en")} readers on one stream`,
      unit: "ms",
      better: "lower",
    },
    {
      key: "fanOutMs",
      label: `one append reaches all ${READERS.toLocaleString("en")} parked readers`,
      unit: "ms",
      better: "lower",
    },
  ],
  ours: {
    name: "@durablekit/streams",
    async run({ ctx }) {
      const streams = new Streams(ctx);
      const figures = await tail(streams);
      const left = streams.waitStats();
      if (left.readers !== 0) throw new Error(`${left.readers} readers still parked`);
      return figures;
    },
  },
  anchor: {
    name: ANCHOR_NAME,
    async run({ ctx, env }) {
      return tail(await startAnchor(ctx, env));
    },
  },
};
