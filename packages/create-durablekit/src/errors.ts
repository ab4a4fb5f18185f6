import { DurableKitError, type ErrorCodeOf, errorGuard } from "@durablekit/compose";

/**
 * Every error `create-durablekit` throws is a {@link CreateError} with a stable string `code`:
 *
 * - `create/invalid-argument`: the folder's name cannot be a package name (npm's rules: lowercase
 *   letters, digits, `-`, `.`, `_`, at most 214 characters); nothing was written.
 * - `create/conflict`: the folder exists and is not empty; nothing was written.
 */
export type CreateErrorCode = ErrorCodeOf<"create", "invalid-argument" | "conflict">;

/**
 * Base class of every error thrown by `create-durablekit` (a `DurableKitError` of
 * `@durablekit/compose`). None is retryable: each needs another folder name.
 */
export class CreateError extends DurableKitError<CreateErrorCode> {
  override readonly name: string = "CreateError";
}

/** True when `error` is a {@link CreateError}, optionally with the given code. */
export const isCreateError = errorGuard(CreateError);
