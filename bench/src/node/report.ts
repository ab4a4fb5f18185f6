import type { Better, WorkloadInfo } from "../workload.ts";
import { formatFigure, type Spread } from "./stats.ts";

/**
 * One row of `bench/results.json`: a workload's metric, ours against the anchor's. `ours` and
 * `anchor` are medians over the rounds, and `ratio`/`advantage` compare the medians; `min` and `max`
 * hold each side's lowest and highest round.
 */
export interface ResultEntry {
  workload: string;
  metric: string;
  label: string;
  unit: string;
  better: Better;
  /** Our median over the rounds. */
  ours: number;
  oursName: string;
  /** The anchor's median over the rounds, or null without an anchor. */
  anchor: number | null;
  anchorName: string | null;
  /** ours ÷ anchor (medians), or null without an anchor. */
  ratio: number | null;
  /** How many times better our median is (below 1: worse), whichever direction is better. */
  advantage: number | null;
  /** Each side's lowest round. */
  min: { ours: number; anchor: number | null };
  /** Each side's highest round. */
  max: { ours: number; anchor: number | null };
  rounds: number;
}

/** Builds the entry of one metric from each side's spread over the rounds. */
export function entryFor(
  info: WorkloadInfo,
  metric: WorkloadInfo["metrics"][number],
  ours: Spread,
  anchorSpread: Spread | null,
  rounds: number,
): ResultEntry {
  // A metric only ours reports (the anchor side has no such figure) has no anchor: NaN is none.
  const median = anchorSpread?.median ?? null;
  const anchor = median === null || Number.isNaN(median) ? null : median;
  const ratio = anchor === null || anchor === 0 ? null : ours.median / anchor;
  let advantage: number | null = null;
  if (anchor !== null && ours.median !== 0 && anchor !== 0) {
    advantage = metric.better === "higher" ? ours.median / anchor : anchor / ours.median;
  } else if (anchor !== null && ours.median === anchor) {
    advantage = 1;
  }
  return {
    workload: info.name,
    metric: metric.key,
    label: metric.label,
    unit: metric.unit,
    better: metric.better,
    ours: ours.median,
    oursName: info.ours,
    anchor,
    anchorName: info.anchor,
    ratio,
    advantage,
    min: { ours: ours.min, anchor: anchorSpread?.min ?? null },
    max: { ours: ours.max, anchor: anchorSpread?.max ?? null },
    rounds,
  };
}

function range(min: number | null, max: number | null): string {
  return min === null || max === null ? "—" : `${formatFigure(min)}–${formatFigure(max)}`;
}

/**
 * Renders a workload's entries as a Markdown table (pasteable into notes): each side's median and
 * its min–max over the rounds, and the comparison of the medians.
 */
export function renderTable(info: WorkloadInfo, entries: ResultEntry[]): string {
  const anchorHead = info.anchor ?? "anchor";
  const lines = [
    `### ${info.name}: ${info.title}`,
    "",
    `| metric | unit | ${info.ours} median | min–max | ${anchorHead} median | min–max | ratio of medians (ours/anchor) | ours is (medians) |`,
    "|---|---|---:|---:|---:|---:|---:|---|",
  ];
  for (const e of entries) {
    const verdict =
      e.advantage === null
        ? "—"
        : e.advantage >= 1
          ? `${formatFigure(e.advantage)}× better`
          : `${formatFigure(1 / e.advantage)}× worse`;
    lines.push(
      `| ${e.label} | ${e.unit} | ${formatFigure(e.ours)} | ${range(e.min.ours, e.max.ours)} | ${formatFigure(e.anchor)} | ${range(e.min.anchor, e.max.anchor)} | ${e.ratio === null ? "—" : formatFigure(e.ratio)} | ${verdict} |`,
    );
  }
  return lines.join("\n");
}
