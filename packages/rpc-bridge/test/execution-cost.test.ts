import { countingState } from "@durablekit/test-kit";
import { describe, expect, it } from "vitest";
import { freshReplay, inReplay } from "./helpers";

describe("the cost of an execution's own record", () => {
  it("writes its row twice, at its start and its end: 6 rows written with its index entries, whatever it returns", async () => {
    const stub = freshReplay();
    const written = await inReplay(stub, async (instance, state) => {
      const counting = countingState(state);
      const executor = instance.create({ ctx: counting.state });
      // The first run creates the tables; measure from the second on.
      await executor.execute("export default async () => 0;", undefined, {
        id: "warm",
        onInterrupt: "fail",
      });
      const costs: number[] = [];
      for (const [id, body] of [
        ["plain", "return 1;"],
        ["bigger", "return { list: [1, 2, 3], text: 'x'.repeat(1000) };"],
      ]) {
        const mark = counting.mark();
        await executor.execute(`export default async () => { ${body} };`, undefined, {
          id,
          onInterrupt: "fail",
        });
        costs.push(counting.counts(mark, /dk_bridge_executions/).rowsWritten);
      }
      return costs;
    });
    // The row's insert (with its entries in the state and creation indexes) and its finish (the
    // row, and its state's index entry moved): DESIGN.md, "Storage".
    expect(written).toEqual([6, 6]);
  });
});
