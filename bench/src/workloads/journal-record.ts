import { digestArgs, encode, JournalStore, topLevelKey } from "@durablekit/handle-journal";
import { perSecond } from "../timing";
import type { Workload } from "../workload";

const CALLS = 10_000;
const BIG_BYTES = 3 * 1024 * 1024;

/**
 * Recording calls in the journal store: rows written per call (goal: 1 unless the payload is
 * chunked), calls recorded per second, and storage bytes per call. No anchor: the journals of
 * `@cloudflare/computer@0.8.0` cannot be driven on their own (see journal-replay).
 */
export const journalRecord: Workload = {
  name: "journal-record",
  title: `journal store: record ${CALLS.toLocaleString("en")} calls (~100-byte results) and one ${BIG_BYTES / 2 ** 20} MiB result`,
  metrics: [
    { key: "rowsPerCall", label: "rows written per recorded call", unit: "rows", better: "lower" },
    { key: "callsPerSecond", label: "calls recorded", unit: "calls/s", better: "higher" },
    { key: "bytesPerCall", label: "database bytes per recorded call", unit: "B", better: "lower" },
    {
      key: "rowsBigCall",
      label: `rows written for the ${BIG_BYTES / 2 ** 20} MiB result`,
      unit: "rows",
      better: "lower",
    },
  ],
  ours: {
    name: "handle-journal JournalStore",
    run({ ctx }) {
      const store = new JournalStore(ctx);
      const digest = digestArgs([{ id: "job-1", ref: "main" }]).digest;
      const payloads = Array.from({ length: CALLS }, (_, i) =>
        encode({
          id: `job-${i}`,
          status: "queued",
          at: new Date(1_700_000_000_000 + i),
          position: i,
        }),
      );
      const sizeBefore = ctx.storage.sql.databaseSize;
      let rows = 0;
      const start = performance.now();
      for (let i = 0; i < CALLS; i++) {
        rows += store.record({
          executionId: "bench",
          key: topLevelKey(i + 1),
          module: "codemode:jobs",
          method: "status",
          argsDigest: digest,
          outcome: "value",
          payload: payloads[i] as string,
        }).rowsWritten;
      }
      const ms = performance.now() - start;
      const bytes = ctx.storage.sql.databaseSize - sizeBefore;
      const big = store.record({
        executionId: "bench-big",
        key: "1",
        module: "codemode:files",
        method: "read",
        argsDigest: digest,
        outcome: "value",
        payload: encode("x".repeat(BIG_BYTES)),
      });
      return {
        rowsPerCall: rows / CALLS,
        callsPerSecond: perSecond(CALLS, ms),
        bytesPerCall: bytes / CALLS,
        rowsBigCall: big.rowsWritten,
      };
    },
  },
};
