import type { TaskRunSnapshot } from "@durablekit/tasks";

/** Polls `read` until the run is completed, failed or cancelled, and returns its snapshot. */
export async function settled(
  read: () => Promise<TaskRunSnapshot | null> | TaskRunSnapshot | null,
  timeoutMs = 5_000,
): Promise<TaskRunSnapshot> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await read();
    if (run && (run.state === "completed" || run.state === "failed" || run.state === "cancelled")) {
      return run;
    }
    if (Date.now() > deadline) throw new Error(`the run did not settle: ${JSON.stringify(run)}`);
    await scheduler.wait(10);
  }
}
