import { iso } from '../platform/clock.ts';
import { describeRefusals, MAX_BATCH_GET_KEYS } from '../platform/dynamo.ts';
import type { TransactItem, TransactOutcome } from '../platform/dynamo.ts';
import { handle, snooze } from '../jobs/index.ts';
import type { JobContext, JobHandler, PreparedJob } from '../jobs/index.ts';
import { CallsEvent } from './ports.ts';
import { CONTENTION_SNOOZE_MS, roundDelayMs } from './backoff.ts';
import { retriedIn } from './control/batch-control.ts';
import type { CallsDeps } from './deps.ts';
import { dialKind, finaliseKind } from './kinds.ts';
import { BatchStatus, ContactStatus, countAttribute, jobIds } from './model.ts';
import type { BatchRow } from './model.ts';

/** Contacts read (one BatchGetItem) and promoted per step: a step writes a list page of them, the round's outcomes and the batch. */
export const FINALISE_CHUNK = MAX_BATCH_GET_KEYS;

/** Steps (transactions) per run; the cursor on the batch lets the next run go on where this one stopped. */
export const FINALISE_STEPS_PER_RUN = 25;

/** A run stops starting steps after this much real time. */
export const FINALISE_RUN_BUDGET_MS = 20_000;

const isFinalising = (batch: BatchRow | undefined, round: number): batch is BatchRow =>
  batch !== undefined && batch.round === round && (batch.status === BatchStatus.InProgress || batch.status === BatchStatus.Paused) && batch.dialComplete && batch.nCalling === 0;

/** What the owner's mail and the batch.finalised event say. */
export function finalSummary(batch: BatchRow): Record<string, unknown> {
  return {
    batchId: batch.batchId,
    rounds: batch.round,
    maxAttempts: batch.maxAttempts,
    contacts: batch.contactCount,
    byStatus: Object.fromEntries(Object.values(ContactStatus).map((s) => [s, batch[countAttribute(s)]])),
    byCode: batch.byCode,
  };
}

/**
 * calls.finalise: one per batch and round (its id is `calls.finalise:<batch>:<round>`), enqueued by the
 * round's last completion. Idempotent: every write is conditional on the round, the status and the
 * finaliser's own cursor, so a second run, or a run after a crash, finds the work done or goes on from
 * where it stopped.
 *
 * ```
 * rounds used = maxAttempts ───────────────────────────────────────────────► Finalised
 * otherwise: walk the round's list, 100 contacts per step (one transaction),
 *   completed in this round with a retryable code → one page of the next round's list; no contact is
 *   written: it is RetryEligible because its code is retryable and the batch moves to the next round
 *   any promoted? ── yes ─► InProgress, round + 1, cursor reset, dialer in
 *                   │       min(cap, base·2^rounds + 1..1000 ms), batch.round_scheduled
 *                   └ no ──► Finalised
 * Finalised: batch.finalised event + owner.notify (when the tenant has an owner email), same transaction.
 * ```
 */
export function finaliseHandler(deps: CallsDeps): JobHandler<{ batchId: string; round: number }> {
  return handle(finaliseKind, async (args, ctx) => {
    const { store } = deps;
    let batch = await store.getBatch(args.batchId);
    if (!isFinalising(batch, args.round)) return;
    if (batch.round < batch.maxAttempts) {
      batch = await promote(deps, batch, ctx);
      if (!batch) return;
    }
    // The summary reads the batch as committed.
    const current = await store.getBatch(args.batchId);
    if (!isFinalising(current, args.round)) return;
    const result = current.round < current.maxAttempts && current.nextSize > 0 ? await rearm(deps, current, ctx) : await finalise(deps, current, ctx);
    await settle(deps, result, args.batchId, args.round);
  });
}

/** Walks the round's list from the cursor, promoting retryable contacts; the batch as it now stands, or undefined if it moved on. */
async function promote(deps: CallsDeps, start: BatchRow, ctx: JobContext): Promise<BatchRow | undefined> {
  const { store } = deps;
  const started = performance.now();
  let batch = start;
  for (let steps = 0; batch.finPage < batch.listPages; steps++) {
    if (steps >= FINALISE_STEPS_PER_RUN || performance.now() - started > FINALISE_RUN_BUDGET_MS) throw snooze({ delayMs: 0 }, `finalised ${steps} steps this run; continuing`);
    const page = await store.getListPage(batch.batchId, batch.round, batch.finPage);
    if (!page) throw new Error(`round ${batch.round} of batch ${batch.batchId} has no list page ${batch.finPage}`);
    const chunk = page.numbers.slice(batch.finPos, batch.finPos + FINALISE_CHUNK);
    const next = batch.finPos + chunk.length < page.numbers.length ? { page: batch.finPage, pos: batch.finPos + chunk.length } : { page: batch.finPage + 1, pos: 0 };
    // Keys DynamoDB leaves unprocessed fail the run (IncompleteReadError): the job layer owns retries.
    const found = await store.getContacts(batch.batchId, chunk);
    const promoted = chunk.flatMap((contactNumber) => {
      const contact = found.get(contactNumber);
      return contact && contact.round === batch.round && contact.code && retriedIn(batch.retryOn, contact.code)
        ? [{ contactNumber, code: contact.code }]
        : [];
    });
    const result = await store.transact(store.promotionItems({ batch, page: batch.finPage, pos: batch.finPos, next, promote: promoted, now: ctx.now() }));
    if (!result.committed) {
      await settle(deps, result, batch.batchId, batch.round);
      return undefined;
    }
    const byCode = { ...batch.byCode };
    for (const p of promoted) byCode[p.code] = (byCode[p.code] ?? 0) - 1;
    batch = {
      ...batch,
      finPage: next.page,
      finPos: next.pos,
      nextPages: batch.nextPages + (promoted.length > 0 ? 1 : 0),
      nextSize: batch.nextSize + promoted.length,
      nCompleted: batch.nCompleted - promoted.length,
      nRetryEligible: batch.nRetryEligible + promoted.length,
      byCode,
    };
  }
  return batch;
}

/** The next round: InProgress, round + 1, the dialer delayed by the rounds' ExponentialWithJitter (backoff.ts), and batch.round_scheduled. */
async function rearm(deps: CallsDeps, batch: BatchRow, ctx: JobContext): Promise<TransactOutcome> {
  const { store, jobs } = deps;
  const now = ctx.now();
  const nextRound = batch.round + 1;
  const delayMs = roundDelayMs(batch.round, batch.retry, deps.rng);
  const dial = jobs.prepare(dialKind, { batchId: batch.batchId, round: nextRound }, { id: jobIds.dial(batch.batchId, nextRound), delayMs });
  const event = await deps.ports.events.prepare(
    { tenantId: batch.tenantId, type: CallsEvent.batchRoundScheduled, data: { batchId: batch.batchId, round: nextRound, contacts: batch.nextSize, dialAt: iso(now + delayMs) } },
    now,
  );
  return commit(deps, [store.rearmItem(batch, now), store.closeRoundItem(batch, now), dial.item, ...event.items], [dial], event);
}

/** Finalised, with batch.finalised and, when the tenant has an owner email, owner.notify — one transaction. */
async function finalise(deps: CallsDeps, batch: BatchRow, ctx: JobContext): Promise<TransactOutcome> {
  const { store, ports } = deps;
  const now = ctx.now();
  const summary = finalSummary(batch);
  const event = await ports.events.prepare({ tenantId: batch.tenantId, type: CallsEvent.batchFinalised, data: summary }, now);
  const tenant = await store.getTenantRow(batch.tenantId);
  const notify = tenant?.ownerEmail ? ports.ownerMail.batchFinalised({ tenantId: batch.tenantId, eventId: event.eventId, summary }) : { items: [], jobs: [] };
  return commit(deps, [store.finaliseItem(batch, now), store.closeRoundItem(batch, now), ...event.items, ...notify.items], [...notify.jobs], event);
}

/**
 * Commits the items; once committed, runs what the event's publisher asks for after the commit and wakes
 * the jobs among the items; not committed, lets the publisher undo what it wrote first.
 */
async function commit(deps: CallsDeps, items: TransactItem[], prepared: PreparedJob[], event: { afterCommit(): Promise<void>; abandon(): Promise<void> }): Promise<TransactOutcome> {
  const result = await deps.store.transact(items);
  if (!result.committed) {
    await event.abandon();
    return result;
  }
  await event.afterCommit();
  await deps.jobs.afterCommit(prepared);
  return result;
}

/**
 * After a write: committed → done. Cancelled by another writer → snooze briefly (no attempt spent).
 * Cancelled by a condition → if the batch moved on (another run finished the round, or it was deleted)
 * there is nothing left to do; otherwise something unexpected happened, and the job fails to be retried.
 */
async function settle(deps: CallsDeps, result: TransactOutcome, batchId: string, round: number): Promise<void> {
  if (result.committed) return;
  if (result.contention) throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the batch');
  const current = await deps.store.getBatch(batchId);
  if (!isFinalising(current, round)) return;
  throw new Error(`finaliser write for batch ${batchId} round ${round} cancelled: ${describeRefusals(result)}`);
}
