export { freePort } from "./free-port.ts";
export { startWranglerDev, type WranglerDev, type WranglerDevOptions } from "./wrangler-dev.ts";
