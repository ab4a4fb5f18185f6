import { defineConfig } from "vitest/config";

// One end-to-end file, in Node: it starts verdaccio and wrangler itself and stops them by PID.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 240_000,
    hookTimeout: 60_000,
  },
});
