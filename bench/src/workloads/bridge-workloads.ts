import type { Workload } from "../workload";
import { bridgeVsComputer } from "./bridge-computer";
import { bridgeReplay } from "./bridge-replay";
import { bridgeReplayProfile } from "./bridge-replay-profile";
import { bridgeVsRpc } from "./bridge-rpc";

/** The rpc-bridge workloads, in the order the runner prints them. */
export const bridgeWorkloads: Workload[] = [
  bridgeVsRpc,
  bridgeVsComputer,
  bridgeReplay,
  bridgeReplayProfile,
];
