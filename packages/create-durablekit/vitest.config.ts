import { defineConfig } from "vitest/config";

// The tests run the built bin (dist/cli.js) with Node, in temporary folders, as `npm create` does.
export default defineConfig({
  test: { include: ["test/**/*.test.ts"] },
});
