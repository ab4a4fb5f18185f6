import { defineConfig } from "vitest/config";

// End-to-end tests run in Node against a real `wrangler dev`. Files that kill, restart or configure their
// server start and stop their own; the others share one, started once for the run (shared-dev.setup.ts).
export default defineConfig({
  test: {
    include: ["test/e2e/*.e2e.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
    globalSetup: ["test/e2e/shared-dev.setup.ts"],
  },
});
