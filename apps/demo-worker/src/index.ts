import type { Env } from "./env";
import { createRouter } from "./router";
import { chatRoutes } from "./routes/chat";
import { debugRoutes } from "./routes/debug";
import { fanoutRoutes } from "./routes/fanout";
import { feedRoutes } from "./routes/feeds";
import { healthRoutes } from "./routes/health";
import { inspectRoutes } from "./routes/inspect";
import { pageRoutes } from "./routes/page";
import { programRoutes } from "./routes/programs";
import { scheduleRoutes } from "./routes/schedules";
import { streamRoutes } from "./routes/streams";
import { taskRoutes } from "./routes/tasks";

export { ChatRoom } from "./chat-room";
export { Programs } from "./programs";
export { ProtocolStream } from "./protocol-stream";
export { Shard } from "./shard";
export { SubscriptionHub } from "./subscription-hub";
export { Workspace } from "./workspace";

// Each area of the demo's HTTP API (see README) lives in its own module under routes/.
const route = createRouter([
  ...pageRoutes,
  ...healthRoutes,
  ...taskRoutes,
  ...scheduleRoutes,
  ...feedRoutes,
  ...fanoutRoutes,
  ...debugRoutes,
  ...programRoutes,
  ...streamRoutes,
  ...chatRoutes,
  ...inspectRoutes,
]);

export default {
  fetch(request: Request, env: Env): Promise<Response> {
    return route(request, env);
  },
} satisfies ExportedHandler<Env>;
