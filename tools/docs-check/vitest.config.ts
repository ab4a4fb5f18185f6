import { defineConfig } from "vitest/config";

// The docs' shell examples run in Node-spawned bash against one real `wrangler dev` of the demo.
export default defineConfig({
  test: {
    include: ["test/*.test.ts"],
    testTimeout: 150_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
