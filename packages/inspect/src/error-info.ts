import type { InspectErrorInfo } from "./shape";

/** A stored error as the inspector shows it: its name, message and code, nothing else. */
export function errorInfoOf(error: {
  name: string;
  message: string;
  code?: string;
}): InspectErrorInfo {
  const info: InspectErrorInfo = { name: String(error.name), message: String(error.message) };
  if (typeof error.code === "string") info.code = error.code;
  return info;
}
