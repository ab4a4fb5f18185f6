import { packageBuild } from "../../tsup.base";

// `cli` is the bin `npm create durablekit` runs; `index` the same as a function, for scripts.
export default packageBuild({ entries: ["index", "cli"] });
