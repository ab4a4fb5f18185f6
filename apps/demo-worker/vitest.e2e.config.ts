import { defineConfig } from "vitest/config";

// End-to-end tests run in Node against a real `wrangler dev` that each test file starts and stops.
export default defineConfig({
  test: {
    include: ["test/e2e/*.e2e.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
