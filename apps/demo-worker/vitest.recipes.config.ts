import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// The docs' composition recipes, as fixture objects, with real alarms.
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./test/recipes/wrangler.jsonc" } })],
  test: { include: ["test/recipes/*.test.ts"], testTimeout: 30_000 },
});
