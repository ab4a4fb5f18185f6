import { digestText } from "@durablekit/handle-journal";
import { WIRE_VERSION } from "../shared/wire";
import { JOURNAL_FORMAT } from "./journal-format";

/**
 * What a replay run's program sees, recorded when it starts and compared when it is recovered or
 * resumed: a replay is only sound against the same program, source modules, runtime and formats.
 * Host modules are left out on purpose: their code may change between attempts (a deploy), which
 * is what `[handle.revive]` maps are for. Stored as JSON in `dk_bridge_executions.fingerprint`.
 */
export interface BridgeReplayFingerprint {
  compatibilityDate: string;
  compatibilityFlags: string[];
  wire: number;
  journal: number;
  /** Digest of the program source. */
  program: string;
  /** Digest of each configured source module's text, by specifier. */
  sources: Record<string, string>;
}

/** The fingerprint of a program under the executor's configuration now. */
export function fingerprintOf(
  program: string,
  sources: Iterable<{ specifier: string; source: string }>,
  compatibilityDate: string,
  compatibilityFlags: readonly string[],
): BridgeReplayFingerprint {
  const digests: Record<string, string> = {};
  for (const { specifier, source } of sources) digests[specifier] = digestText(source);
  return {
    compatibilityDate,
    compatibilityFlags: [...compatibilityFlags].sort(),
    wire: WIRE_VERSION,
    journal: JOURNAL_FORMAT,
    program: digestText(program),
    sources: digests,
  };
}

/**
 * What changed between a recorded fingerprint (JSON, or null for a row that has none) and the one
 * now, in words; `null` when nothing did.
 */
export function fingerprintChange(
  recorded: string | null,
  now: BridgeReplayFingerprint,
): string | null {
  if (recorded === null) return "the run has no recorded fingerprint";
  let was: Partial<BridgeReplayFingerprint>;
  try {
    was = JSON.parse(recorded) as Partial<BridgeReplayFingerprint>;
  } catch {
    return "its recorded fingerprint is unreadable";
  }
  const changes: string[] = [];
  if (was.compatibilityDate !== now.compatibilityDate) {
    changes.push(`compatibilityDate ${was.compatibilityDate} → ${now.compatibilityDate}`);
  }
  if (JSON.stringify(was.compatibilityFlags) !== JSON.stringify(now.compatibilityFlags)) {
    changes.push("compatibilityFlags");
  }
  if (was.wire !== now.wire) changes.push(`wire version ${was.wire} → ${now.wire}`);
  if (was.journal !== now.journal) changes.push(`journal format ${was.journal} → ${now.journal}`);
  if (was.program !== now.program) changes.push("the program source");
  const before = was.sources ?? {};
  for (const specifier of new Set([...Object.keys(before), ...Object.keys(now.sources)])) {
    if (before[specifier] !== now.sources[specifier]) {
      changes.push(`source module "${specifier}"`);
    }
  }
  return changes.length === 0 ? null : changes.join(", ");
}
