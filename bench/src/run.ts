import { writeFileSync } from "node:fs";
import { arch, cpus, totalmem } from "node:os";
import { fileURLToPath } from "node:url";
import { startWranglerDev } from "@durablekit/wrangler-harness";
import { entryFor, type ResultEntry, renderTable } from "./node/report.ts";
import { spread } from "./node/stats.ts";
import type { Figures, WorkloadInfo } from "./workload.ts";

// `pnpm bench [filter…] [--rounds N]`: runs every workload whose name contains a filter, each side in
// a fresh Durable Object per round, alternating which side goes first, and prints each side's
// min/median/max over the rounds (comparisons use the medians, never the best round).
const args = process.argv.slice(2).filter((a) => a !== "--");
let rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const filters: string[] = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--rounds") rounds = Number(args[++i]);
  else filters.push(args[i]!);
}
if (!Number.isInteger(rounds) || rounds < 1) throw new Error("--rounds takes a positive integer");
if (rounds < 3)
  console.warn(`only ${rounds} round(s): min/median/max need at least 3 to mean much`);

const benchDir = fileURLToPath(new URL("..", import.meta.url));
const dev = await startWranglerDev({ cwd: benchDir, readyPath: "/workloads" });
try {
  const all = (await (await fetch(`${dev.url}/workloads`)).json()) as WorkloadInfo[];
  const chosen = all.filter((w) => filters.length === 0 || filters.some((f) => w.name.includes(f)));
  if (chosen.length === 0) {
    throw new Error(
      `no workload matches ${filters.join(", ")}; known: ${all.map((w) => w.name).join(", ")}`,
    );
  }
  const results: ResultEntry[] = [];
  console.log(
    `durablekit bench — ${rounds} interleaved rounds, min/median/max; ${cpus().length} cores, ${arch()}, node ${process.version}\n`,
  );
  for (const info of chosen) {
    const sides: Array<"ours" | "anchor"> = info.anchor ? ["ours", "anchor"] : ["ours"];
    const samples: Record<"ours" | "anchor", Figures[]> = { ours: [], anchor: [] };
    // One warm-up round per side (bundle load, first SQLite page allocations) is discarded.
    for (let round = -1; round < rounds; round++) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const response = await fetch(`${dev.url}/run`, {
          method: "POST",
          body: JSON.stringify({ workload: info.name, side, round }),
        });
        const body = (await response.json()) as Figures | { error: string };
        if (!response.ok || "error" in body) {
          throw new Error(`${info.name} (${side}) failed: ${(body as { error: string }).error}`);
        }
        if (round >= 0) samples[side].push(body as Figures);
      }
    }
    const entries = info.metrics.map((metric) => {
      const pick = (list: Figures[]) => spread(list.map((f) => f[metric.key] ?? Number.NaN));
      const anchor = info.anchor ? pick(samples.anchor) : null;
      return entryFor(info, metric, pick(samples.ours), anchor, rounds);
    });
    results.push(...entries);
    console.log(`${renderTable(info, entries)}\n`);
  }
  const file = fileURLToPath(new URL("../results.json", import.meta.url));
  const machine = {
    cores: cpus().length,
    arch: arch(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  };
  writeFileSync(
    file,
    `${JSON.stringify({ at: new Date().toISOString(), machine, results }, null, 2)}\n`,
  );
  console.log(`wrote ${file}`);
} finally {
  await dev.dispose();
}
