export {
  type CodeBlock,
  type FileBlock,
  Guide,
  NO_RUN,
  PARTIAL,
  type ShellBlock,
  STATUS_COMMENT,
} from "./guide.ts";
export { DOCS_BASE_URL, type GuideOutcome, GuideRun, type GuideRunOptions } from "./guide-run.ts";
export {
  checkSnippets,
  documentedGuides,
  type SnippetCheckOptions,
  type SnippetProblem,
  type SnippetReport,
} from "./snippet-check.ts";
