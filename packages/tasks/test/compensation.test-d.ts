// Compiled by `tsc --noEmit` (the package's typecheck, run by `pnpm check`): a compensation gets
// the step's result with the step's own type, so a wrong field is a compile error.
import type { TaskStep } from "../src/index";

export async function booked(step: TaskStep): Promise<string> {
  const booking = await step.do(
    "book",
    { compensate: (result) => result.id.toUpperCase() },
    async () => ({ id: "b1", seats: 2 }),
  );
  await step.do(
    "book-again",
    // @ts-expect-error the result has no field `missing`
    { compensate: (result) => result.missing },
    () => ({ id: "b2" }),
  );
  return booking.id;
}
