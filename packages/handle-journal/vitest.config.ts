import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Behaviour tests run inside workerd against the fixture Durable Objects in test/fixtures.
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./test/wrangler.jsonc" } })],
  // Property tests generate 10,000 values each; on a loaded machine that takes more than the
  // default 5 s, and no test asserts wall time.
  test: { include: ["test/**/*.test.ts"], testTimeout: 120_000 },
});
