import { defineConfig } from "vitest/config";

// The README's example, run as written under a real `wrangler dev` and driven by headless Chromium
// (Node, not workerd): see test/browser.
export default defineConfig({
  test: {
    include: ["test/browser/*.browser.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
