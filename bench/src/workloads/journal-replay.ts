import {
  digestArgs,
  encode,
  JournalStore,
  Replayer,
  replayOutcome,
  topLevelKey,
} from "@durablekit/handle-journal";
import type { Figures, Workload, WorkloadContext } from "../workload";

const ENTRIES = 10_000;
const EXECUTION = "bench-replay";

/** Records the same 10,000-call journal on every side (not timed). */
function seed({ ctx }: WorkloadContext): JournalStore {
  const store = new JournalStore(ctx);
  for (let i = 1; i <= ENTRIES; i++) {
    store.record({
      executionId: EXECUTION,
      key: topLevelKey(i),
      module: "codemode:jobs",
      method: "status",
      argsDigest: digestArgs([{ id: `job-${i}` }]).digest,
      outcome: "value",
      payload: encode({ id: `job-${i}`, status: "done", at: new Date(1_700_000_000_000 + i) }),
    });
  }
  return store;
}

/** Replays every call: digest its arguments, ask for its recorded outcome, decode it. */
function replayAll(answer: (key: string, digest: string) => unknown): number {
  let checksum = 0;
  for (let i = 1; i <= ENTRIES; i++) {
    const value = answer(topLevelKey(i), digestArgs([{ id: `job-${i}` }]).digest) as { at: Date };
    checksum += value.at.getTime() % 7;
  }
  return checksum;
}

function figures(ms: number, queries: number): Figures {
  return { msTotal: ms, callsPerSecond: (ENTRIES * 1000) / Math.max(ms, 1), queries };
}

/**
 * Loading and replaying a 10,000-entry journal: one query for the whole journal, then each call
 * answered in memory, against the same journal read back with one query per entry.
 * `@cloudflare/computer@0.8.0`'s journal (`ExecutionJournal`) is not exported and only runs
 * inside a full Worker Loader execution, so it cannot be driven as the same workload here.
 */
export const journalReplay: Workload = {
  name: "journal-replay",
  title: `load and replay a ${ENTRIES.toLocaleString("en")}-entry journal (digest args, match, decode each result)`,
  metrics: [
    {
      key: "msTotal",
      label: `load + replay ${ENTRIES.toLocaleString("en")} calls`,
      unit: "ms",
      better: "lower",
    },
    { key: "callsPerSecond", label: "replayed calls", unit: "calls/s", better: "higher" },
    { key: "queries", label: "SQLite queries", unit: "queries", better: "lower" },
  ],
  ours: {
    name: "entries() + Replayer",
    run(context) {
      const store = seed(context);
      const start = performance.now();
      const replay = new Replayer(store.entries(EXECUTION));
      replayAll((key, digest) => {
        const step = replay.next(key, "codemode:jobs", "status", digest);
        if (step.status !== "replayed") throw new Error(`entry ${key} missing`);
        return replayOutcome(step.entry);
      });
      const ms = performance.now() - start;
      if (replay.remaining !== 0) throw new Error("replay left entries");
      return figures(ms, 1);
    },
  },
  anchor: {
    name: "one query per entry",
    run(context) {
      const store = seed(context);
      const start = performance.now();
      replayAll((key, digest) => {
        const entry = store.entry(EXECUTION, key);
        if (entry === null || entry.argsDigest !== digest || entry.method !== "status") {
          throw new Error(`entry ${key} missing or diverged`);
        }
        return replayOutcome(entry);
      });
      return figures(performance.now() - start, ENTRIES);
    },
  },
};
