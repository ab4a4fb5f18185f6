// The part of `node:diagnostics_channel` (nodejs_compat) the tasks workloads use to observe the
// anchor's task events; the bench compiles against workers types only.
declare module "node:diagnostics_channel" {
  export function subscribe(
    name: string,
    onMessage: (message: unknown, name: string) => void,
  ): void;
  export function unsubscribe(
    name: string,
    onMessage: (message: unknown, name: string) => void,
  ): boolean;
}
