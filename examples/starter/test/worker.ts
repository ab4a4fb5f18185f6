// The Worker the tests run: the starter's own Worker and object, plus the test-only CrashCounter.
export { Counter, default } from "../src/index";
export { CrashCounter } from "./crash-counter";
