import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.jsonc" },
      // The tests call http://demo/… and read the /debug/* routes.
      miniflare: { bindings: { DEMO_DEBUG: "on", DEMO_ALLOWED_HOSTS: "demo" } },
    }),
  ],
  test: {
    include: ["test/*.test.ts"],
  },
});
