import { clockMs, iso } from '../platform/clock.ts';
import { describeRefusals } from '../platform/dynamo.ts';
import type { TransactCancelled } from '../platform/dynamo.ts';
import { handle, snooze } from '../jobs/index.ts';
import type { JobContext, JobHandler } from '../jobs/index.ts';
import type { BatchConfig } from './batch-config.ts';
import { CallCode } from './codes.ts';
import { retriedIn } from './control/batch-control.ts';
import { completeCall } from './completion.ts';
import type { CallsDeps } from './deps.ts';
import { deferredWatchdogKind, dialKind, finaliseKind, watchdogKind } from './kinds.ts';
import { DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H, decideCapSlot } from './compliance/cap.ts';
import type { CapSlotRead } from './compliance/cap.ts';
import { planDialGroup } from './compliance/deferral.ts';
import type { DialCandidate } from './compliance/deferral.ts';
import { ComplianceItems, NeverDialledCode } from './compliance/dial-items.ts';
import type { DeferredEntry } from './compliance/dial-items.ts';
import { windowOpenFor } from './compliance/hours.ts';
import { recipientZones } from './compliance/recipient.ts';
import type { RunWatchdogArgs } from './kinds.ts';
import { BatchStatus, callIdFor, callWithSlot, jobIds } from './model.ts';
import type { SlotRow } from './model.ts';
import type { BatchRow, ContactDataRow, ListPage } from './model.ts';
import { placeCall } from './placer.ts';
import { nextWindowOpening } from './window.ts';
import { CONTENTION_SNOOZE_MS } from './backoff.ts';

/** A run stops starting dials after this much real time, so it ends well inside its job timeout. */
export const DIAL_RUN_BUDGET_MS = 20_000;


/**
 * The least real time between two looks for a free slot. A look costs real requests whatever the clock's
 * speed: under a scaled clock (TIME_SCALE) a 3 s wait would otherwise become a tight loop.
 */
export const MIN_SLOT_POLL_REAL_MS = 250;

/** What a cancelled dial means, from its refused items by name (tenant, batch; the watchdog's job). */
export type DialVerdict = 'contention' | 'batch_changed' | 'no_slot' | 'unexplained';

/** Reads a cancelled dial's reasons. Pure. */
export function judgeDialCancel(cancelled: TransactCancelled): DialVerdict {
  if (cancelled.contention) return 'contention';
  const { tenant, batch } = cancelled.refused;
  // A batch that changed (deleted, cursor moved, its watchdog closed) makes the rest moot.
  if (batch?.code === 'ConditionalCheckFailed') return 'batch_changed';
  if (tenant?.code === 'ConditionalCheckFailed') return tenant.item ? 'no_slot' : 'unexplained';
  return 'unexplained';
}

const isDialling = (batch: BatchRow | undefined, round: number): batch is BatchRow =>
  batch !== undefined && batch.round === round && (batch.status === BatchStatus.Pending || batch.status === BatchStatus.InProgress) && !batch.dialComplete;

const configOf = (batch: BatchRow): BatchConfig => ({
  batchId: batch.batchId,
  tenantId: batch.tenantId,
  minConversationDurationSeconds: batch.minConversationDurationSeconds,
});

/** The cursor's position `by` contacts on in a round's list (a group never crosses a page). */
const advance = (batch: BatchRow, pageLength: number, by = 1) =>
  batch.dialPos + by < pageLength ? { page: batch.dialPage, pos: batch.dialPos + by } : { page: batch.dialPage + 1, pos: 0 };

/**
 * calls.dial: dials one round of a batch, in list order (docs/calls.md, "The dialer").
 *
 * Each dial is ONE transaction over a group of up to `dialGroup` consecutive contacts of a list page — the
 * tenant's slot shard gives a slot per call (a conditional counter), the batch counts the calls and moves
 * its cursor past them; no contact is written (a position behind the cursor is a call in progress, and
 * its call id names the round and position: model.ts `callIdFor`). The run's first dial also enqueues the
 * run's watchdog, which covers the list positions the run may dial, and names it open on the batch; a
 * later dial of the run requires it still open (a watchdog closes itself when it runs, so a run that
 * outlasts its watchdog's due time dials on under a new one instead of under one that has looked already)
 * — and only then is the placer asked, once a call, in list order. Every call of a watchdog holds a slot of
 * the same shard (its args name it, so it can release them), so a run whose shard is full while another
 * has room dials on under a new watchdog too. A placer failure completes the call with INTERNAL_ERROR
 * through the same path as a result. Outside the batch's calling window the job snoozes until it opens;
 * with no free slot it snoozes briefly; neither spends an attempt. A run dials at most `dialsPerRun`
 * contacts (and stops starting dials after {@link DIAL_RUN_BUDGET_MS}), then snoozes to continue at once:
 * the cursor on the batch says where.
 */
export function dialHandler(deps: CallsDeps): JobHandler<{ batchId: string; round: number }> {
  return handle(dialKind, async (args, ctx) => {
    const { config } = deps;
    if (!config.placerUrl || !config.callbackUrl) throw new Error('calls.dial needs CALL_PLACER_URL and CALL_WEBHOOK_URL');
    const batch = await deps.store.getBatch(args.batchId);
    if (!isDialling(batch, args.round)) return;
    // Each group's calls are placed in list order before the next group is dialled, so the placer sees the list's order.
    const started = performance.now();
    await dialRun(deps, batch, ctx, async (contactNumber, callId, dialled, dialledAt, data) => {
      // A call of the group whose time is up before it was placed (a run that outlasted its watchdog's due
      // time: a stalled machine, a scaled clock) is its watchdog's to end with TIMEOUT, if it has not
      // already: placing it now would only make a call whose result is ignored.
      if (ctx.now() - dialledAt >= config.callTimeoutSeconds * 1000) {
        deps.logger.warn('a dialled call timed out before it was placed; its watchdog ends it', { batchId: dialled.batchId, contactNumber });
        return;
      }
      await place(deps, dialled, { contactNumber, callId, dialledAt, data }, { url: config.placerUrl!, callbackUrl: config.callbackUrl! }, ctx, performance.now() - started > config.placeBudgetMs);
    });
  });
}

/** What a dial group considers at most: its dials, and as many deferrals and endings as its transaction has room for (each up to 4 items; DynamoDB takes 100). */
export const MAX_GROUP_CANDIDATES = 20;

/** Refused groups a run re-plans in a row (a suppression, a cap slot taken) before it gives up the run. */
const MAX_REPLANS = 20;

/** A contact a group considers: its list position, number and zones, and its deferred entry when it comes from the deferred list. */
interface Candidate extends DialCandidate {
  entry?: DeferredEntry;
}

async function dialRun(
  deps: CallsDeps,
  start: BatchRow,
  ctx: JobContext,
  onDialled: (contactNumber: string, callId: string, batch: BatchRow, dialledAt: number, data: ContactDataRow | undefined) => Promise<void>,
): Promise<void> {
  const { store, jobs, config } = deps;
  const compliance = new ComplianceItems(store.tableName);
  const started = performance.now();
  const pages = new Map<number, ListPage>();
  let batch = start;
  // The run's watchdog, created with its first dial from the list: it covers the list positions this run may dial.
  let watchdog: RunWatchdogArgs | undefined;
  // Where the tenant has free slots, as this run last saw it: read once, kept up to date by its own dials
  // and by the shard a refused dial returns. The dial's condition, not this view, enforces the limit.
  let slots: SlotRow[] | undefined;
  const tenantRow = await store.getTenantRow(batch.tenantId);
  const cap = tenantRow?.maxCallsPerNumberPer24h ?? DEFAULT_MAX_CALLS_PER_NUMBER_PER_24H;
  // What the run learnt from refused dials and its own claims: numbers found suppressed, cap slots as stored.
  const suppressed = new Set<string>();
  const capView = new Map<string, CapSlotRead[]>();
  // When the round's earliest deferred entry comes due, as last read or deferred by this run.
  let nextDue = (batch.nDeferred ?? 0) > 0 ? await store.firstDeferral(batch.batchId, batch.round) : undefined;
  let replans = 0;
  for (let dials = 0; ; ) {
    if (batch.dialComplete) return;
    const listLeft = batch.dialPage < batch.listPages;
    if (!listLeft && (batch.nDeferred ?? 0) === 0) return;
    const now = ctx.now();
    const window = batch.callingWindow;
    const perContact = window?.perContact === true;
    // One zone for the whole batch: outside its window nobody is dialled, so the run sleeps until it opens.
    const opening = window && !perContact ? nextWindowOpening(window, now) : null;
    if (opening !== null) throw snooze({ until: opening }, 'outside the calling window');
    if (dials >= config.dialsPerRun || performance.now() - started > DIAL_RUN_BUDGET_MS) throw snooze({ delayMs: 0 }, `dialled ${dials} this run; continuing`);

    // Due deferred contacts go first (they have waited); else the list at the cursor; else sleep until the
    // earliest deferral (never a poll: every wake-up is a time a deferral named).
    const fromDeferred = nextDue !== undefined && nextDue <= now;
    if (!listLeft && !fromDeferred) {
      nextDue = await store.firstDeferral(batch.batchId, batch.round);
      if (nextDue === undefined) throw new Error(`batch ${batch.batchId} counts ${batch.nDeferred} deferred contacts in round ${batch.round} and lists none`);
      if (nextDue > now) throw snooze({ until: nextDue }, `${batch.nDeferred} deferred contacts wait; the first may be dialled at ${iso(nextDue)}`);
      continue;
    }
    if (!fromDeferred && watchdog && !covers(watchdog, batch.dialPage, batch.dialPos)) throw snooze({ delayMs: 0 }, `dialled ${dials} this run, as far as its watchdog covers; continuing`);

    slots ??= await store.getSlots(batch.tenantId);
    if (slots.length === 0) throw new Error(`tenant ${batch.tenantId} has no slot shards: PUT /v1/tenants/${batch.tenantId} again to split its limit`);
    // The run's watchdog's shard is full but another has room: dial on there, under a watchdog of its own.
    if (watchdog && room(slots, watchdog.shard) === 0 && freestSlot(slots)) watchdog = undefined;
    // A new watchdog takes the freest shard; among shards with as much room, a drawn one, so that runs which
    // find the shards alike (an idle tenant) do not all take shard 0 and its partition's writes.
    const slot = watchdog && !fromDeferred ? slots.find((s) => s.shard === watchdog!.shard) : freestSlot(slots, deps.rng.int(0, slots.length - 1));
    if (!slot || slot.limit - slot.active <= 0) throw snooze({ delayMs: Math.max(config.noSlotSnoozeMs, clockMs(deps.clock, MIN_SLOT_POLL_REAL_MS)) }, 'the tenant is at its concurrency limit');
    // The batch's own limit, as last seen (its calls only go down meanwhile: look again before sleeping on it).
    if (batch.maxConcurrentCalls !== undefined && batch.nCalling >= batch.maxConcurrentCalls) {
      const fresh = await store.getBatch(batch.batchId);
      if (!isDialling(fresh, batch.round)) return;
      batch = { ...batch, nCalling: fresh.nCalling, maxConcurrentCalls: fresh.maxConcurrentCalls };
      if (batch.maxConcurrentCalls !== undefined && batch.nCalling >= batch.maxConcurrentCalls) {
        throw snooze({ delayMs: Math.max(config.noSlotSnoozeMs, clockMs(deps.clock, MIN_SLOT_POLL_REAL_MS)) }, 'the batch is at its maxConcurrentCalls');
      }
    }
    const batchRoom = batch.maxConcurrentCalls === undefined ? Number.POSITIVE_INFINITY : batch.maxConcurrentCalls - batch.nCalling;

    // The candidates: the due entries of the deferred list, or the list from the cursor (as far as the
    // run's watchdog covers, or would cover if this group opens it).
    let candidates: Candidate[];
    let page: ListPage | undefined;
    if (fromDeferred) {
      const entries = await store.dueDeferrals(batch.batchId, batch.round, now, MAX_GROUP_CANDIDATES);
      if (entries.length === 0) {
        nextDue = (batch.nDeferred ?? 0) > 0 ? await store.firstDeferral(batch.batchId, batch.round) : undefined;
        if (nextDue !== undefined && nextDue <= now) throw new Error(`batch ${batch.batchId}: a due deferred entry was not read back`);
        continue;
      }
      candidates = entries.map((entry) => ({ page: entry.page, pos: entry.pos, number: entry.number, zones: [], entry }));
    } else {
      page = pages.get(batch.dialPage) ?? (await store.getListPage(batch.batchId, batch.round, batch.dialPage));
      if (!page || page.numbers[batch.dialPos] === undefined) throw new Error(`round ${batch.round} of batch ${batch.batchId} has no list entry at page ${batch.dialPage}, position ${batch.dialPos}`);
      pages.set(batch.dialPage, page);
      const cover = watchdog ? watchdog.pos + watchdog.count - batch.dialPos : config.dialsPerRun;
      const count = Math.max(1, Math.min(MAX_GROUP_CANDIDATES, cover, page.numbers.length - batch.dialPos));
      candidates = page.numbers.slice(batch.dialPos, batch.dialPos + count).map((number, i) => ({ page: batch.dialPage, pos: batch.dialPos + i, number, zones: [] }));
    }

    // The contacts' data (externalId and variables for the placer, a zone for the window), read before the
    // dial commits: a read that fails fails the run with nothing dialled, never a call dialled and not placed.
    const data = batch.hasContactData ? await store.getContactData(batch.batchId, candidates.map((c) => c.number)) : undefined;
    const hours = perContact ? window : undefined;
    if (hours) {
      for (const c of candidates) {
        const d = data?.get(c.number);
        c.zones = recipientZones({ number: c.number, ...(d?.timezone ? { timezone: d.timezone } : {}), ...(d?.region ? { region: d.region } : {}) }, { timezone: hours.timezone, perContact: true }, now).zones;
      }
    }
    const maxDials = Math.max(1, Math.min(config.dialGroup, MAX_GROUP_CANDIDATES, config.dialsPerRun - dials, slot.limit - slot.active, batchRoom));
    // The cap: each number the group may dial now has its slots read (a few more than it can dial, so a
    // capped one does not end the group early); the group stops before the first it has not read.
    let open = 0;
    let cut = candidates.length;
    for (const [i, c] of candidates.entries()) {
      if (suppressed.has(c.number) || (hours && !windowOpenFor(hours, c.zones, now))) continue;
      if (++open > maxDials + 2) {
        cut = i;
        break;
      }
    }
    candidates = candidates.slice(0, cut);
    const unread = candidates.filter((c) => !suppressed.has(c.number) && !capView.has(c.number) && (!hours || windowOpenFor(hours, c.zones, now))).map((c) => c.number);
    if (unread.length > 0) for (const [number, read] of await store.capSlots(batch.tenantId, unread)) capView.set(number, read);
    const capFreeAt = new Map<string, number>();
    for (const c of candidates) {
      const read = capView.get(c.number);
      const decision = read ? decideCapSlot(read, cap, now) : undefined;
      if (decision && 'freesAt' in decision) capFreeAt.set(c.number, decision.freesAt);
    }

    // The plan: a prefix of the candidates, each dialled, deferred, or ended (suppressed; no window ever).
    const live = candidates.filter((c) => !suppressed.has(c.number));
    const plan = planDialGroup({ hours, candidates: live, capFreeAt, nowMs: now, maxDials, maxDeferrals: MAX_GROUP_CANDIDATES });
    const prefix = plan.decided >= live.length ? candidates.length : candidates.indexOf(live[plan.decided]!);
    const decided = candidates.slice(0, prefix);
    const endSuppressed = decided.filter((c) => suppressed.has(c.number));
    const byPosition = new Map(decided.map((c) => [`${c.page}.${c.pos}`, c]));
    const entryOf = (c: { page: number; pos: number }) => byPosition.get(`${c.page}.${c.pos}`)?.entry;
    const calls = plan.dial.map((c) => {
      const claim = decideCapSlot(capView.get(c.number) ?? [], cap, now);
      if (!('claim' in claim)) throw new Error(`planned to dial ${c.number} at its cap`);
      return { ...c, capSlot: claim.claim, callId: callWithSlot(callIdFor(batch.batchId, c.number, { round: batch.round, page: c.page, pos: c.pos }), slot.shard) };
    });
    const k = calls.length;
    const ended = plan.unreachable.length + endSuppressed.length;
    const next = fromDeferred ? undefined : page ? advance(batch, page.numbers.length, prefix) : undefined;
    // A deferred group takes its dialled and ended entries off the list; those it defers again stay counted.
    const deferredDelta = fromDeferred ? -(k + ended) : plan.defer.length;
    const cursorAfter = next ?? { page: batch.dialPage, pos: batch.dialPos };
    const completes = cursorAfter.page >= batch.listPages && (batch.nDeferred ?? 0) + deferredDelta === 0;

    // A group that completes the round's dialling without a call of its own starts the finaliser itself
    // when no call is out (else the last call's completion does): it needs the calls out as they are.
    let callingIs: number | undefined;
    let finaliser: ReturnType<typeof jobs.prepare> | undefined;
    if (completes && k === 0) {
      const fresh = await store.getBatch(batch.batchId);
      if (!isDialling(fresh, batch.round)) return;
      callingIs = fresh.nCalling;
      batch = { ...batch, nCalling: fresh.nCalling };
      if (callingIs === 0) finaliser = jobs.prepare(finaliseKind, { batchId: batch.batchId, round: batch.round }, { id: jobIds.finalise(batch.batchId, batch.round) });
    }

    // A list group that dials runs under the run's watchdog (opening it if this is its first); a deferred
    // group's calls are not consecutive positions, so they get a watchdog of their own.
    const block: RunWatchdogArgs | undefined =
      fromDeferred || (k === 0 && !watchdog)
        ? undefined
        : (watchdog ?? {
            batchId: batch.batchId,
            round: batch.round,
            seq: (batch.watchdogs ?? 0) + 1,
            page: batch.dialPage,
            pos: batch.dialPos,
            count: Math.min(config.dialsPerRun, page!.numbers.length - batch.dialPos),
            shard: slot.shard,
            ...(batch.lastDialAt ? { prevDialAt: batch.lastDialAt } : {}),
          });
    const watchdogId = block ? jobIds.watchdog(block.batchId, block.round, block.seq) : undefined;
    // Due once the run's last call may have timed out: a run starts no dial after DIAL_RUN_BUDGET_MS.
    const watchdogDue = now + config.callTimeoutSeconds * 1000 + DIAL_RUN_BUDGET_MS;
    const created = block && !watchdog ? jobs.prepare(watchdogKind, block, { id: watchdogId!, at: watchdogDue }) : undefined;
    const groupWatchdog =
      fromDeferred && k > 0
        ? jobs.prepare(deferredWatchdogKind, { batchId: batch.batchId, round: batch.round, shard: slot.shard, dialledAt: iso(now), calls: calls.map((c) => ({ page: c.page, pos: c.pos, number: c.number })) }, { id: jobIds.deferredWatchdog(batch.batchId, batch.round, calls[0]!.page, calls[0]!.pos), at: watchdogDue })
        : undefined;

    const items = [
      ...store.dialItems({
        batch,
        count: k,
        page: batch.dialPage,
        pos: batch.dialPos,
        ...(next ? { next } : {}),
        slot: slot.shard,
        slotLimit: slot.limit,
        ...(watchdogId ? { watchdogJobId: watchdogId } : {}),
        ...(created ? { opensWatchdog: block!.seq } : {}),
        deferredDelta,
        deferralsAdded: fromDeferred ? 0 : plan.defer.length,
        suppressed: endSuppressed.length,
        endedByCode: plan.unreachable.length > 0 ? { [NeverDialledCode.noCallingWindow]: plan.unreachable.length } : {},
        ...(batch.maxConcurrentCalls !== undefined ? { batchLimit: batch.maxConcurrentCalls } : {}),
        ...(callingIs !== undefined ? { callingIs } : {}),
        now,
      }),
      ...calls.flatMap((c) => {
        const entry = entryOf(c);
        return [
          compliance.capClaim(batch.tenantId, c.number, c.capSlot, { callId: c.callId, batchId: batch.batchId }, now),
          compliance.notSuppressed(batch.tenantId, c.number),
          ...(entry ? compliance.take(entry, now, true) : []),
        ];
      }),
      ...plan.defer.flatMap((d) => {
        const entry = entryOf(d);
        return entry ? compliance.redefer(entry, d, now) : compliance.defer(batch.batchId, batch.round, d, now);
      }),
      ...[...plan.unreachable.map((c) => ({ c, code: NeverDialledCode.noCallingWindow })), ...endSuppressed.map((c) => ({ c, code: NeverDialledCode.suppressed }))].flatMap(({ c, code }) => {
        const entry = entryOf(c);
        return [compliance.neverDialled(batch.batchId, c.number, batch.round, code, now), ...(entry ? compliance.take(entry, now, false) : [])];
      }),
      ...(created ? [created.item] : []),
      ...(groupWatchdog ? [groupWatchdog.item] : []),
      ...(finaliser ? [finaliser.item] : []),
    ];
    const result = await store.transact(items);
    if (result.committed) {
      replans = 0;
      if (k > 0) slot.active += k;
      batch = {
        ...batch,
        status: BatchStatus.InProgress,
        dialPage: cursorAfter.page,
        dialPos: cursorAfter.pos,
        dialComplete: completes,
        nDeferred: (batch.nDeferred ?? 0) + deferredDelta,
        nCalling: batch.nCalling + k,
        ...(k > 0 && next ? { lastDialAt: iso(now) } : {}),
        ...(watchdogId ? { openWatchdog: watchdogId, watchdogs: block!.seq } : {}),
      };
      for (const c of calls) capView.set(c.number, [...(capView.get(c.number) ?? []).filter((s) => s.slot !== c.capSlot), { slot: c.capSlot, at: now }]);
      if (created) watchdog = block;
      if (fromDeferred) nextDue = (batch.nDeferred ?? 0) > 0 ? await store.firstDeferral(batch.batchId, batch.round) : undefined;
      else if (plan.earliestDeferral !== undefined) nextDue = Math.min(nextDue ?? plan.earliestDeferral, plan.earliestDeferral);
      await jobs.afterCommit([...(created ? [created] : []), ...(groupWatchdog ? [groupWatchdog] : []), ...(finaliser ? [finaliser] : [])]);
      if (ended > 0) deps.logger.info('contacts ended without a call', { batchId: batch.batchId, suppressed: endSuppressed.length, noCallingWindow: plan.unreachable.length });
      // Placed in list order, each once, after the commit (a crash in between leaves them to the watchdog).
      for (const c of calls) await onDialled(c.number, c.callId, batch, now, data?.get(c.number));
      dials += k;
      continue;
    }
    if (result.contention) throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the tenant, the batch or a number');
    // What a refusal taught: a number suppressed, a cap slot another dial took. Plan again with it.
    const learnt = learnFromRefusal(result, suppressed, capView);
    if (learnt === 'entry_taken') throw new Error(`a deferred entry of batch ${batch.batchId} was taken by another run`);
    if (learnt === 'replan' && !result.refused['tenant'] && !result.refused['batch']) {
      if (++replans > MAX_REPLANS) throw new Error(`batch ${batch.batchId}: ${replans} dial groups refused in a row: ${describeRefusals(result)}`);
      continue;
    }
    const verdict = judgeDialCancel(result);
    switch (verdict) {
      case 'contention':
        throw snooze({ delayMs: CONTENTION_SNOOZE_MS }, 'another transaction held the tenant or the batch');
      case 'no_slot': {
        // That shard is full as stored: another shard may still have room.
        const stored = result.refused['tenant']?.item as SlotRow | undefined;
        if (stored) slots = slots.map((s) => (s.shard === stored.shard ? stored : s));
        if (freestSlot(slots)) continue;
        throw snooze({ delayMs: Math.max(config.noSlotSnoozeMs, clockMs(deps.clock, MIN_SLOT_POLL_REAL_MS)) }, 'the tenant is at its concurrency limit');
      }
      case 'batch_changed': {
        const stored = result.refused['batch']?.item as BatchRow | undefined;
        if (watchdog && watchdogId && watchdogClosed(stored, batch, watchdogId)) {
          // The run's watchdog ran (its due time came while this run went on) and closed itself: it may
          // have looked already, so no further call may name it. Dial on under a watchdog of its own.
          watchdog = undefined;
          batch = stored!;
          continue;
        }
        // The cursor and the deferred list as this run left them: what moved is the calls out (the batch's
        // own limit, or a round's last call that ended meanwhile). Look again with the batch as stored.
        if (stored && isDialling(stored, batch.round) && sameDialState(stored, batch)) {
          if (++replans > MAX_REPLANS) throw new Error(`batch ${batch.batchId}: ${replans} dial groups refused in a row: ${describeRefusals(result)}`);
          batch = stored;
          continue;
        }
        const current = await store.getBatch(batch.batchId);
        if (!isDialling(current, batch.round)) return; // deleted, paused, or the round moved on: nothing left to dial
        throw new Error(`the dial cursor of batch ${batch.batchId} moved under this run`);
      }
      case 'unexplained':
        throw new Error(`dial of ${candidates.map((c) => c.number).join(', ')} in batch ${batch.batchId} cancelled: ${describeRefusals(result)}`);
      default:
        return verdict satisfies never;
    }
  }
}

/** Whether the stored batch has the cursor, the deferred count and the open watchdog this run last saw. */
const sameDialState = (stored: BatchRow, batch: BatchRow): boolean =>
  stored.dialPage === batch.dialPage && stored.dialPos === batch.dialPos && (stored.nDeferred ?? 0) === (batch.nDeferred ?? 0) && stored.openWatchdog === batch.openWatchdog;

/**
 * Reads a refused dial's compliance items: a suppression check that failed (the number is suppressed: the
 * group ends it), a cap claim that failed (the slot as stored: the view is corrected), or a deferred entry
 * gone (another run took it). Updates what it learnt in place.
 */
export function learnFromRefusal(result: TransactCancelled, suppressed: Set<string>, capView: Map<string, CapSlotRead[]>): 'replan' | 'entry_taken' | 'none' {
  let learnt: 'replan' | 'entry_taken' | 'none' = 'none';
  for (const [name, refusal] of Object.entries(result.refused)) {
    if (refusal.code !== 'ConditionalCheckFailed') continue;
    if (name.startsWith('supp:')) {
      suppressed.add(name.slice('supp:'.length));
      if (learnt === 'none') learnt = 'replan';
    } else if (name.startsWith('cap:')) {
      const number = name.slice('cap:'.length);
      const stored = refusal.item as CapSlotRead | undefined;
      if (stored) capView.set(number, [...(capView.get(number) ?? []).filter((s) => s.slot !== stored.slot), { slot: stored.slot, at: stored.at }]);
      else capView.delete(number);
      if (learnt === 'none') learnt = 'replan';
    } else if (name.startsWith('defer:') || name.startsWith('mark:')) {
      learnt = 'entry_taken';
    }
  }
  return learnt;
}

/** Whether a refused dial found the batch as the run left it but for its watchdog, which closed itself. */
const watchdogClosed = (stored: BatchRow | undefined, batch: BatchRow, watchdogId: string): boolean =>
  isDialling(stored, batch.round) && stored.dialPage === batch.dialPage && stored.dialPos === batch.dialPos && stored.openWatchdog !== watchdogId;

/** The slot shard with the most free slots as last seen, if any has one; ties go to the first from index `from` on (wrapping). */
const freestSlot = (slots: readonly SlotRow[], from = 0): SlotRow | undefined =>
  [...slots.slice(from), ...slots.slice(0, from)].reduce<SlotRow | undefined>((best, s) => (s.limit - s.active > 0 && (!best || s.limit - s.active > best.limit - best.active) ? s : best), undefined);

/** Free slots of one shard as last seen. */
const room = (slots: readonly SlotRow[], shard: number): number => {
  const slot = slots.find((s) => s.shard === shard);
  return slot ? Math.max(0, slot.limit - slot.active) : 0;
};

/** Whether a run's watchdog covers a list position (its page, from its position, `count` of them). */
const covers = (block: RunWatchdogArgs, page: number, pos: number): boolean => page === block.page && pos >= block.pos && pos < block.pos + block.count;

/**
 * Asks the placer for the call, once. A refusal completes the call with INTERNAL_ERROR through the
 * completion path; if even that cannot be written now, the call's watchdog ends it later (TIMEOUT).
 */
async function place(
  deps: CallsDeps,
  batch: BatchRow,
  call: { contactNumber: string; callId: string; dialledAt: number; data: ContactDataRow | undefined },
  placer: { url: string; callbackUrl: string },
  ctx: JobContext,
  outOfTime: boolean,
): Promise<void> {
  const { contactNumber, callId, data } = call;
  const { logger } = deps;
  if (outOfTime) {
    logger.warn('no time left in the dial run to place a call; completing it with INTERNAL_ERROR', { batchId: batch.batchId, contactNumber });
  } else {
    const placed = await placeCall(
      placer.url,
      {
        batchId: batch.batchId,
        contactNumber,
        round: batch.round,
        callId,
        callbackUrl: placer.callbackUrl,
        placedAt: iso(call.dialledAt),
        ...(data?.externalId !== undefined ? { externalId: data.externalId } : {}),
        ...(data?.variables !== undefined ? { variables: data.variables } : {}),
      },
      { timeoutMs: deps.config.placerTimeoutMs, signal: ctx.signal },
    );
    if (placed.accepted) return;
    logger.warn('the placer refused a call; completing it with INTERNAL_ERROR', { batchId: batch.batchId, contactNumber, reason: placed.reason });
  }
  try {
    const outcome = await completeCall(deps, configOf(batch), {
      batchId: batch.batchId,
      contactNumber,
      callId,
      classification: { code: CallCode.internalError, retryable: retriedIn(batch.retryOn, CallCode.internalError) },
      source: 'placer',
    });
    if (outcome.outcome === 'unavailable') logger.warn('INTERNAL_ERROR not recorded now; the watchdog will end the call', { batchId: batch.batchId, contactNumber });
  } catch (error) {
    logger.warn('INTERNAL_ERROR not recorded; the watchdog will end the call', { batchId: batch.batchId, contactNumber, error: String(error) });
  }
}
