// Names kept for compatibility: each type was renamed so that its name carries the package's
// noun (docs/composing.md, "Names of types"). They will be removed in 1.0.
import type {
  DurableStreamsForkExport,
  DurableStreamsForkExportRequest,
  SseBoundedBody,
  SseOffsetRequest,
} from "./index";

/** @deprecated Renamed {@link SseBoundedBody}. */
export type BoundedBody = SseBoundedBody;

/** @deprecated Renamed {@link DurableStreamsForkExport}. */
export type ForkExport = DurableStreamsForkExport;

/** @deprecated Renamed {@link DurableStreamsForkExportRequest}. */
export type ForkExportRequest = DurableStreamsForkExportRequest;

/** @deprecated Renamed {@link SseOffsetRequest}. */
export type OffsetRequest = SseOffsetRequest;
