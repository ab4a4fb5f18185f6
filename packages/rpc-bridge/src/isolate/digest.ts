/**
 * The argument digest of a replay run's isolate: handle-journal's `digestArgs`, bundled at build
 * time into the `__dk_digest.js` module (scripts/build-isolate.mjs). It is shipped only with the
 * attempts of replay runs and imported only when the host sent answers ahead, so the runtime every
 * isolate starts with does not carry the codec.
 */
export { digestArgs } from "@durablekit/handle-journal";
