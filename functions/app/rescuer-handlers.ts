import { handle } from '../jobs/index.ts';
import type { JobHandler } from '../jobs/index.ts';
import { allKinds } from './catalog.ts';

/**
 * What the deployed rescuer is given: every kind (its policy prices a lost attempt; the periodic ones are
 * enqueued each period) and, where a kind has a discard hook, the handler that holds it, which runs before
 * the rescuer writes a discard of a last attempt lost with its worker. `hooked` is every handler with a
 * hook (the webhooks context's: webhook.deliver, webhook.recover; test/infra/routes.test.ts checks that no
 * other context's handler has one). The rescuer runs no job, so the other kinds' code stays out of its
 * bundle: each is bound to a run that refuses, which nothing calls (the job layer's rescuer only reads a
 * handler's kind and its hook, functions/jobs/runtime.ts).
 */
export function rescuerHandlers(hooked: readonly JobHandler<unknown>[]): JobHandler<unknown>[] {
  const byKind = new Map(hooked.filter((h) => h.onDiscard !== undefined).map((h) => [h.kind.kind, h]));
  return allKinds.map((kind) => byKind.get(kind.kind) ?? handle(kind, () => Promise.reject(new Error(`${kind.kind} runs on its queue's worker, never in the rescuer`))));
}
