import { defineConfig } from "vitest/config";

// Checks of the tree itself (no server, no Worker): run by the root's `pnpm check`, not `pnpm test`.
export default defineConfig({
  test: {
    include: ["checks/*.test.ts"],
    testTimeout: 120_000,
  },
});
