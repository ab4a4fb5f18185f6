import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.jsonc" },
      // The tests call http://demo/… and read the /debug/* routes; a missing SSE stream 404s soon.
      miniflare: {
        bindings: { DEMO_DEBUG: "on", DEMO_ALLOWED_HOSTS: "demo", DEMO_SSE_WAIT_MS: "300" },
      },
    }),
  ],
  test: {
    include: ["test/*.test.ts"],
  },
});
