/**
 * The time a calendar route may spend, and what each request gets of it. A route's budget is measured from
 * the handler's start; each request it sends (the token exchange, then the calendar call) gets what remains
 * minus a margin, kept for the route's own commit and answer. With less than the minimum left, nothing is
 * sent: a request that cannot finish in time would only leave an unknown outcome behind.
 *
 * ```
 *   handler start                                                      deadline = start + 2.5 s
 *   |── token exchange (when the cached token is missing) ──|── insert ──────────|··margin··|
 *                        timeout = deadline − now − margin   timeout = deadline − now − margin
 * ```
 *
 * Budgets are wall time (a Lambda's real seconds, Google's token lifetimes), never TIME_SCALE's clock.
 */

/** The longest a calendar route waits on the calendar, from the handler's start. */
export const ROUTE_BUDGET_MS = 2_500;

/** Kept back from every request's timeout, for the route's commit and answer after it. */
export const DEFAULT_MARGIN_MS = 300;

/** Below this, a request is not sent at all. */
export const DEFAULT_MIN_REQUEST_MS = 100;

/** A route's deadline: its handler's start plus {@link ROUTE_BUDGET_MS}. */
export const routeDeadline = (handlerStartMs: number, budgetMs: number = ROUTE_BUDGET_MS): number => handlerStartMs + budgetMs;

/**
 * The timeout of a request sent at `now` toward `deadline`: what remains minus `marginMs`, or undefined
 * when that is below `minRequestMs` (send nothing).
 *
 * @example
 * requestTimeout(start + 2_500, start + 400, { marginMs: 300, minRequestMs: 100 }); // 1_800
 * requestTimeout(start + 2_500, start + 2_150, { marginMs: 300, minRequestMs: 100 }); // undefined
 */
export function requestTimeout(deadline: number, now: number, options: { marginMs: number; minRequestMs: number }): number | undefined {
  const timeout = deadline - now - options.marginMs;
  return timeout >= options.minRequestMs ? timeout : undefined;
}
