import { baseHeaders } from "../protocol/responses";

/** The protocol's error codes for the reserved subscription APIs, and their statuses. */
export const SUBSCRIPTION_ERROR_STATUS = {
  INVALID_REQUEST: 400,
  SUBSCRIPTION_NOT_FOUND: 404,
  SUBSCRIPTION_ALREADY_EXISTS: 409,
  SUBSCRIPTION_LIMIT: 409,
  WEBHOOK_URL_REJECTED: 400,
  TOKEN_INVALID: 401,
  TOKEN_EXPIRED: 401,
  FENCED: 409,
  ALREADY_CLAIMED: 409,
  NO_PENDING_WORK: 409,
  INVALID_OFFSET: 409,
  SUBSCRIPTION_DEAD: 409,
} as const;

/**
 * A code of the subscription APIs' error answers (`{ "error": { "code", "message" } }`). The
 * protocol's own codes, plus `SUBSCRIPTION_LIMIT` (the hub holds its maximum of subscriptions or a
 * subscription its maximum of streams) and `SUBSCRIPTION_DEAD` (a dead-lettered subscription is
 * claimed; confirm it with its PUT to revive it).
 */
export type DurableStreamsSubscriptionErrorCode = keyof typeof SUBSCRIPTION_ERROR_STATUS;

/** A refusal on its way to becoming an answer. */
export interface Refusal {
  code: DurableStreamsSubscriptionErrorCode;
  message: string;
  extra?: Record<string, unknown>;
}

export function refusal(
  code: DurableStreamsSubscriptionErrorCode,
  message: string,
  extra?: Record<string, unknown>,
): Refusal {
  return extra === undefined ? { code, message } : { code, message, extra };
}

export function isRefusal(value: unknown): value is Refusal {
  return (
    value !== null &&
    typeof value === "object" &&
    typeof (value as Refusal).code === "string" &&
    (value as Refusal).code in SUBSCRIPTION_ERROR_STATUS &&
    typeof (value as Refusal).message === "string"
  );
}

/** A JSON answer. */
export function json(status: number, body: unknown, extra?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: baseHeaders({ "Content-Type": "application/json", ...extra }),
  });
}

/** A refusal as the protocol answers it. */
export function refused(refusal: Refusal): Response {
  return json(SUBSCRIPTION_ERROR_STATUS[refusal.code], {
    error: { code: refusal.code, message: refusal.message, ...refusal.extra },
  });
}

export function noContent(): Response {
  return new Response(null, { status: 204, headers: baseHeaders() });
}
