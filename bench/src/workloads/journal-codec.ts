import { decode, encode } from "@durablekit/handle-journal";
import superjson from "superjson";
import { perSecond, timeLoop } from "../timing";
import type { Figures, MetricSpec, Workload, WorkloadSide } from "../workload";
import { CODEC_SHAPES, type CodecShape } from "./journal-values";

const METRICS: MetricSpec[] = CODEC_SHAPES.flatMap((shape) => [
  {
    key: `${shape.key}Ops`,
    label: `${shape.label}: encode+decode`,
    unit: "ops/s",
    better: "higher" as const,
  },
  {
    key: `${shape.key}Bytes`,
    label: `${shape.label}: encoded size`,
    unit: "B",
    better: "lower" as const,
  },
]);

interface Codec {
  encode(value: unknown, shape: CodecShape): string;
  decode(text: string): unknown;
}

/** One side: encode+decode every shape `iterations` times with `codec`. */
function side(name: string, sideCodec: Codec): WorkloadSide {
  return {
    name,
    run() {
      const figures: Figures = {};
      for (const shape of CODEC_SHAPES) {
        const codec = {
          encode: (v: unknown) => sideCodec.encode(v, shape),
          decode: sideCodec.decode,
        };
        const value = shape.make();
        const text = codec.encode(value);
        // Warm the code paths before timing (JIT tiers); the timed loop does the same work.
        for (let i = 0; i < Math.min(200, shape.iterations); i++) codec.decode(codec.encode(value));
        let sink = 0;
        const ms = timeLoop(shape.iterations, () => {
          const t = codec.encode(value);
          sink += t.length;
          codec.decode(t);
        });
        if (sink === 0) throw new Error("nothing encoded");
        figures[`${shape.key}Ops`] = perSecond(shape.iterations, ms);
        figures[`${shape.key}Bytes`] = new TextEncoder().encode(text).byteLength;
      }
      return figures;
    },
  };
}

const ours = side("handle-journal codec", { encode: (v) => encode(v), decode: (t) => decode(t) });

/** The codec against plain `JSON.stringify`/`JSON.parse` on the same values (which lose the types). */
export const journalCodecJson: Workload = {
  name: "journal-codec-json",
  title:
    "codec encode+decode vs JSON.stringify/parse on the same values (JSON drops Date/Map/Set/BigInt/Error)",
  metrics: METRICS,
  ours,
  anchor: side("JSON.stringify/parse", {
    // A replacer slows JSON.stringify down, so only the shape holding a BigInt gets one.
    encode: (v, shape) =>
      shape.needsReplacer
        ? JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x))
        : JSON.stringify(v),
    decode: (t) => JSON.parse(t),
  }),
};

/** The codec against raw superjson (`stringify`/`parse`) on the same values. */
export const journalCodecSuperjson: Workload = {
  name: "journal-codec-superjson",
  title: "codec encode+decode vs raw superjson@2.2.7 stringify/parse on the same values",
  metrics: METRICS,
  ours,
  anchor: side("superjson@2.2.7", {
    encode: (v) => superjson.stringify(v),
    decode: (t) => superjson.parse(t),
  }),
};
