import type { Better, WorkloadInfo } from "../workload.ts";
import { formatFigure } from "./stats.ts";

/** One row of `bench/results.json`: a workload's metric, ours against the anchor's. */
export interface ResultEntry {
  workload: string;
  metric: string;
  label: string;
  unit: string;
  better: Better;
  ours: number;
  oursName: string;
  anchor: number | null;
  anchorName: string | null;
  /** ours ÷ anchor, or null without an anchor. */
  ratio: number | null;
  /** How many times better ours is (below 1: worse), whichever direction is better. */
  advantage: number | null;
  rounds: number;
}

/** Builds the entry of one metric from the two medians. */
export function entryFor(
  info: WorkloadInfo,
  metric: WorkloadInfo["metrics"][number],
  ours: number,
  anchor: number | null,
  rounds: number,
): ResultEntry {
  const ratio = anchor === null || anchor === 0 ? null : ours / anchor;
  let advantage: number | null = null;
  if (anchor !== null && ours !== 0 && anchor !== 0) {
    advantage = metric.better === "higher" ? ours / anchor : anchor / ours;
  } else if (anchor !== null && ours === anchor) {
    advantage = 1;
  }
  return {
    workload: info.name,
    metric: metric.key,
    label: metric.label,
    unit: metric.unit,
    better: metric.better,
    ours,
    oursName: info.ours,
    anchor,
    anchorName: info.anchor,
    ratio,
    advantage,
    rounds,
  };
}

/** Renders a workload's entries as a Markdown table (pasteable into notes). */
export function renderTable(info: WorkloadInfo, entries: ResultEntry[]): string {
  const anchorHead = info.anchor ?? "anchor";
  const lines = [
    `### ${info.name}: ${info.title}`,
    "",
    `| metric | unit | ${info.ours} | ${anchorHead} | ratio (ours/anchor) | ours is |`,
    "|---|---|---:|---:|---:|---|",
  ];
  for (const e of entries) {
    const verdict =
      e.advantage === null
        ? "—"
        : e.advantage >= 1
          ? `${formatFigure(e.advantage)}× better`
          : `${formatFigure(1 / e.advantage)}× worse`;
    lines.push(
      `| ${e.label} | ${e.unit} | ${formatFigure(e.ours)} | ${formatFigure(e.anchor)} | ${e.ratio === null ? "—" : formatFigure(e.ratio)} | ${verdict} |`,
    );
  }
  return lines.join("\n");
}
