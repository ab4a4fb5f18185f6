import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Tests run inside workerd (the runtime `wrangler dev` and production use) with test/wrangler.jsonc:
// wrangler.jsonc's Worker and bindings plus the test-only CrashCounter.
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./test/wrangler.jsonc" } })],
  test: { include: ["test/**/*.test.ts"] },
});
