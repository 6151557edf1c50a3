import { iso } from '../../platform/clock.ts';
import { Expression, updateItem } from '../../platform/dynamo.ts';
import type { TransactItem, TransactOutcome } from '../../platform/dynamo.ts';
import { terminalStates } from '../../jobs/index.ts';
import type { JobState, PreparedJob } from '../../jobs/index.ts';
import type { CallsDeps } from '../deps.ts';
import { dialKind } from '../kinds.ts';
import { importJobId } from '../imports/kind.ts';
import { BatchStatus, batchKey, callsExpiry, jobIds } from '../model.ts';
import type { BatchRow } from '../model.ts';
import { CallsEvent } from '../ports.ts';
import { batchTransitions, decidePatch, decidePause, decideResume, pauseExpiresAt } from './batch-control.ts';
import type { BatchPatch, BatchTransition, ControlDecision, ControlState, PausableStatus } from './batch-control.ts';
import { pauseExpiryKind, startKind } from './kinds.ts';

/**
 * Campaign control, wired: the decisions of batch-control.ts written as conditional updates of the batch
 * row (each `status IN (...)` from `batchTransitions`, and `status =` the status the decision was made
 * from), with the jobs they start in the same transaction (jobs.prepare/afterCommit, as the dialer and the
 * finaliser do). Every job id is deterministic: a counter on the batch row (`starts`, `pauses`,
 * `dialWakes`), moved by the same conditional write, numbers the next one, so a repeat creates nothing twice.
 */

/** What batch-control reads of a batch row. */
export function controlStateOf(batch: BatchRow): ControlState {
  return {
    status: batch.status,
    ...(batch.pausedFrom !== undefined ? { pausedFrom: batch.pausedFrom } : {}),
    ...(batch.pausedAt !== undefined ? { pausedAt: Date.parse(batch.pausedAt) } : {}),
    ...(batch.startAt !== undefined ? { startAt: Date.parse(batch.startAt) } : {}),
  };
}

/** The batch row's condition: the transition may start from its status, and it is still the status the decision read. */
function fromStatus(e: Expression, name: BatchTransition, read: BatchRow['status']): Expression {
  return e.when(e.inList('status', batchTransitions[name].from)).when(e.eq('status', read));
}

/** A counter on the batch row is still at `value` (absent counts as 0). */
const counterAt = (e: Expression, attr: string, value: number): string => (value === 0 ? e.or(e.notExists(attr), e.eq(attr, 0)) : e.eq(attr, value));

/** The statuses in which the batch's round dials (the dial's own condition: store.ts `is.diallingRound`). */
const isDiallingStatus = (status: string): boolean => status === BatchStatus.Pending || status === BatchStatus.InProgress;

/** A committed write, or why not: `changed` (a condition: the batch moved on since it was read) or `contention`. */
export type ControlWrite = { written: true; batch: BatchRow } | { written: false; reason: 'changed' | 'contention' };

const refusal = (result: Exclude<TransactOutcome, { committed: true }>): ControlWrite => ({ written: false, reason: result.contention ? 'contention' : 'changed' });

/**
 * The start job of a batch that is (or is to be) Scheduled: its `seq`-th, due at its `startAt`.
 */
export function prepareStart(deps: CallsDeps, batchId: string, seq: number, startAt: string): PreparedJob {
  return deps.jobs.prepare(startKind, { batchId, seq, startAt }, { id: jobIds.start(batchId, seq), at: Date.parse(startAt) });
}

/**
 * The jobs that may still run for a batch's current work, as stored now: its import, its latest start,
 * its round's dialer and latest wake dialer — those not finished. What a deletion asks to stop, and what a
 * wake replaces.
 */
export async function liveJobs(deps: CallsDeps, batch: BatchRow, only: 'dial' | 'all' = 'all'): Promise<{ id: string; scheduledAt: number }[]> {
  const ids = [jobIds.dial(batch.batchId, batch.round)];
  if ((batch.dialWakes ?? 0) > 0) ids.push(jobIds.dialWake(batch.batchId, batch.round, batch.dialWakes!));
  if (only === 'all') {
    ids.push(importJobId(batch.batchId));
    if ((batch.starts ?? 0) > 0) ids.push(jobIds.start(batch.batchId, batch.starts!));
  }
  const rows = await Promise.all(ids.map((id) => deps.jobs.get(id)));
  return rows.flatMap((row) => (row && !(terminalStates as readonly JobState[]).includes(row.state) ? [{ id: row.id, scheduledAt: Date.parse(row.scheduledAt) }] : []));
}

/**
 * Wakes a round's dialing that slept (a resume, a start, a new calling window): a new dial job, the
 * batch's next wake (`calls.dial:<batch>:<round>:wake<n>`; the row's `dialWakes` moves to n in the same
 * write), and a cancel request for the round's dial jobs still waiting, so that one dialer dials the
 * round, not two. The new one is due now (`now`: a start, a new window), or (`keep`: a resume) when the
 * latest of those was, so that a round's backoff is kept.
 */
async function wakeDial(deps: CallsDeps, batch: BatchRow, e: Expression, now: number, when: 'keep' | 'now'): Promise<{ items: TransactItem[]; job: PreparedJob }> {
  const waiting = await liveJobs(deps, batch, 'dial');
  const n = (batch.dialWakes ?? 0) + 1;
  e.when(counterAt(e, 'dialWakes', n - 1)).set('dialWakes', n);
  const at = when === 'now' ? now : Math.max(now, ...waiting.map((j) => j.scheduledAt));
  const job = deps.jobs.prepare(dialKind, { batchId: batch.batchId, round: batch.round }, { id: jobIds.dialWake(batch.batchId, batch.round, n), at });
  return { items: [...waiting.map((j) => deps.jobs.requestCancelItem(j.id)), job.item], job };
}

async function commit(deps: CallsDeps, items: TransactItem[], jobs: PreparedJob[], after: BatchRow): Promise<ControlWrite> {
  const result = await deps.store.transact(items);
  if (!result.committed) return refusal(result);
  await deps.jobs.afterCommit(jobs);
  return { written: true, batch: after };
}

const batchUpdate = (deps: CallsDeps, batchId: string, e: Expression): TransactItem => updateItem('batch', deps.store.tableName, batchKey(batchId), e, { returnStored: true });

/**
 * `POST …/pause` (decidePause): Paused, `pausedFrom` the status it left, `pausedAt` now, and the pause's
 * expiry job (due 30 days on) in the same transaction. A repeat writes nothing.
 */
export async function pauseBatch(deps: CallsDeps, batch: BatchRow, now: number): Promise<ControlWrite> {
  const decision = decidePause(controlStateOf(batch), now);
  if (decision.change === 'none') return { written: true, batch };
  const seq = (batch.pauses ?? 0) + 1;
  const pausedAt = iso(now);
  const e = fromStatus(new Expression(), 'pause', batch.status);
  e.when(counterAt(e, 'pauses', seq - 1))
    .set('status', BatchStatus.Paused)
    .set('pausedFrom', decision.next.pausedFrom)
    .set('pausedAt', pausedAt)
    .set('pauses', seq)
    .set('updatedAt', pausedAt);
  const expiry = deps.jobs.prepare(pauseExpiryKind, { batchId: batch.batchId, seq, pausedAt }, { id: jobIds.pauseExpiry(batch.batchId, seq), at: pauseExpiresAt(now) });
  const after: BatchRow = { ...batch, status: BatchStatus.Paused, pausedFrom: decision.next.pausedFrom!, pausedAt, pauses: seq, updatedAt: pausedAt };
  return commit(deps, [batchUpdate(deps, batch.batchId, e), expiry.item], [expiry], after);
}

/**
 * `POST …/resume` (decideResume): back to `pausedFrom` (a start that passed meanwhile: Pending), only from
 * the same pause. A round left to dial is woken in the same transaction (see {@link wakeDial}); the batch
 * row's TTL runs again from now. A repeat writes nothing.
 */
export async function resumeBatch(deps: CallsDeps, batch: BatchRow, now: number): Promise<ControlWrite> {
  const decision = decideResume(controlStateOf(batch), now);
  if (decision.change === 'none') return { written: true, batch };
  const status = decision.next.status as PausableStatus;
  const e = fromStatus(new Expression(), 'resume', batch.status);
  e.when(e.eq('pausedAt', batch.pausedAt))
    .set('status', status)
    .remove('pausedFrom', 'pausedAt')
    .set('updatedAt', iso(now))
    .set('expiresAt', callsExpiry(now));
  const resumed: BatchRow = { ...batch, status, updatedAt: iso(now), expiresAt: callsExpiry(now) };
  delete resumed.pausedFrom;
  delete resumed.pausedAt;
  const wake = isDiallingStatus(status) && !batch.dialComplete ? await wakeDial(deps, batch, e, now, 'keep') : undefined;
  if (wake) resumed.dialWakes = (batch.dialWakes ?? 0) + 1;
  return commit(deps, [batchUpdate(deps, batch.batchId, e), ...(wake?.items ?? [])], wake ? [wake.job] : [], resumed);
}

/**
 * `PATCH /v1/batches/{id}` (decidePatch): the fields, and for a new `startAt` the status it leads to
 * (Scheduled with a new start job, or Pending with its dialer woken) — the old start job finds another
 * `startAt` and does nothing. A new calling window wakes a dialing round at once (its dialer may be asleep
 * until the old window opens).
 */
export async function patchBatch(deps: CallsDeps, batch: BatchRow, patch: BatchPatch & { callingWindow?: BatchRow['callingWindow'] }, tenantLimit: number, now: number): Promise<ControlWrite & { decision?: ControlDecision }> {
  const decision = decidePatch(controlStateOf(batch), patch, tenantLimit, now);
  if (decision.change === 'none') return { written: true, batch };
  const e = new Expression();
  if (decision.change === 'reschedule') fromStatus(e, 'reschedule', batch.status);
  else e.when(e.eq('status', batch.status));
  const after: BatchRow = { ...batch, updatedAt: iso(now) };
  e.set('updatedAt', iso(now));
  if (patch.maxConcurrentCalls !== undefined) {
    e.set('maxConcurrentCalls', patch.maxConcurrentCalls);
    after.maxConcurrentCalls = patch.maxConcurrentCalls;
  }
  if (patch.callingWindow !== undefined) {
    e.set('callingWindow', patch.callingWindow);
    after.callingWindow = patch.callingWindow;
  }
  const items: TransactItem[] = [];
  const jobs: PreparedJob[] = [];
  const next = decision.next;
  if (patch.startAt !== undefined && next.startAt !== undefined) {
    const startAt = iso(next.startAt);
    e.set('startAt', startAt);
    after.startAt = startAt;
    if (next.status !== batch.status) {
      e.set('status', next.status);
      after.status = next.status;
    }
    if (next.pausedFrom !== undefined && next.pausedFrom !== batch.pausedFrom) {
      e.set('pausedFrom', next.pausedFrom);
      after.pausedFrom = next.pausedFrom;
    }
    // Scheduled (or to be, on resume): a start job of its own for the new time.
    const underlying = next.status === BatchStatus.Paused ? next.pausedFrom : next.status;
    if (underlying === BatchStatus.Scheduled) {
      const seq = (batch.starts ?? 0) + 1;
      e.when(counterAt(e, 'starts', seq - 1)).set('starts', seq);
      after.starts = seq;
      const start = prepareStart(deps, batch.batchId, seq, startAt);
      items.push(start.item);
      jobs.push(start);
    }
  }
  // Dialing from now (a start brought forward) or under a new window: its dialer is woken.
  const startsNow = batch.status === BatchStatus.Scheduled && after.status === BatchStatus.Pending;
  if (isDiallingStatus(after.status) && !batch.dialComplete && (startsNow || patch.callingWindow !== undefined)) {
    const wake = await wakeDial(deps, batch, e, now, 'now');
    items.push(...wake.items);
    jobs.push(wake.job);
    after.dialWakes = (batch.dialWakes ?? 0) + 1;
  }
  return { ...(await commit(deps, [batchUpdate(deps, batch.batchId, e), ...items], jobs, after)), decision };
}

/**
 * The start job (calls.start): a Scheduled batch whose `startAt` came becomes Pending and its round-1
 * dialer is woken, in one transaction; a paused one only has `pausedFrom` moved (resume wakes it). A start
 * of another schedule (the batch was rescheduled), or into a deleted or already started batch, does nothing.
 */
export async function startBatch(deps: CallsDeps, batch: BatchRow, args: { seq: number; startAt: string }, now: number): Promise<ControlWrite | 'nothing'> {
  if (batch.starts !== args.seq || batch.startAt !== args.startAt) return 'nothing';
  const underlying = batch.status === BatchStatus.Paused ? batch.pausedFrom : batch.status;
  if (underlying !== BatchStatus.Scheduled) return 'nothing';
  const e = new Expression();
  e.when(e.eq('status', batch.status)).when(e.eq('starts', args.seq)).when(e.eq('startAt', args.startAt)).set('updatedAt', iso(now));
  if (batch.status === BatchStatus.Paused) {
    e.when(e.eq('pausedFrom', BatchStatus.Scheduled)).set('pausedFrom', BatchStatus.Pending);
    return commit(deps, [batchUpdate(deps, batch.batchId, e)], [], { ...batch, pausedFrom: BatchStatus.Pending });
  }
  fromStatus(e, 'start', batch.status).set('status', BatchStatus.Pending).set('expiresAt', callsExpiry(now));
  const wake = await wakeDial(deps, batch, e, now, 'now');
  return commit(deps, [batchUpdate(deps, batch.batchId, e), ...wake.items], [wake.job], { ...batch, status: BatchStatus.Pending, dialWakes: (batch.dialWakes ?? 0) + 1 });
}

/**
 * The pause expiry job (calls.pause_expiry): a batch still in the same pause (`pausedAt`) 30 days on is
 * Cancelled, with `batch.cancelled`, in one transaction. Only once its calls are over (a paused batch's
 * calls in flight end within their timeout): the tenant's slots must come back first.
 */
export async function cancelPausedBatch(deps: CallsDeps, batch: BatchRow, pausedAt: string, now: number): Promise<ControlWrite> {
  const e = fromStatus(new Expression(), 'cancel', batch.status);
  e.when(e.eq('pausedAt', pausedAt))
    .when(e.eq('nCalling', 0))
    .set('status', BatchStatus.Cancelled)
    .set('cancelledAt', iso(now))
    .set('updatedAt', iso(now))
    .set('expiresAt', callsExpiry(now))
    .remove('pausedFrom');
  const event = await deps.ports.events.prepare(
    {
      tenantId: batch.tenantId,
      type: CallsEvent.batchCancelled,
      data: { batchId: batch.batchId, reason: 'paused for 30 days', pausedAt, pausedFrom: batch.pausedFrom ?? null, round: batch.round, contacts: batch.contactCount, byCode: batch.byCode },
    },
    now,
  );
  const result = await deps.store.transact([batchUpdate(deps, batch.batchId, e), ...event.items]);
  if (!result.committed) {
    await event.abandon();
    return refusal(result);
  }
  await event.afterCommit();
  const cancelled: BatchRow = { ...batch, status: BatchStatus.Cancelled, cancelledAt: iso(now) };
  delete cancelled.pausedFrom;
  return { written: true, batch: cancelled };
}
