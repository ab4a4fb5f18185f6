export { type FileBlock, Guide, NO_RUN, type ShellBlock, STATUS_COMMENT } from "./guide.ts";
export { DOCS_BASE_URL, type GuideOutcome, GuideRun, type GuideRunOptions } from "./guide-run.ts";
