import type { Env } from "./env";
import { createRouter } from "./router";
import { healthRoutes } from "./routes/health";

export { Workspace } from "./workspace";

// Each area of the demo's HTTP API (see README) lives in its own module under routes/.
const route = createRouter([...healthRoutes]);

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    return route(request, env);
  },
} satisfies ExportedHandler<Env>;
