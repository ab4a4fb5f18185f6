import { packageBuild } from "../../tsup.base";

// `@durablekit/inspect/otel` is its own entry: only it imports `@opentelemetry/api`.
export default packageBuild({ entries: ["index", "otel"] });
