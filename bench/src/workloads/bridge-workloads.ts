import type { Workload } from "../workload";
import { bridgeVsComputer } from "./bridge-computer";
import { bridgeVsRpc } from "./bridge-rpc";

/** The rpc-bridge workloads, in the order the runner prints them. */
export const bridgeWorkloads: Workload[] = [bridgeVsRpc, bridgeVsComputer];
