import { afterEach, describe, expect, it } from 'vitest';
import type { SimulatedOutcome } from '../../functions/calls/local/simulator.ts';
import type { RunWatchdogArgs } from '../../functions/calls/kinds.ts';
import { baseCallId, callIdFor, isDialled, slotOfCall } from '../../functions/calls/model.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { callsFixture, numbers, placerGate } from '../support/calls.ts';
import type { CallsFixture, HeldPlacement, PlacerGate } from '../support/calls.ts';

const fixtures: CallsFixture[] = [];
const gates: PlacerGate[] = [];
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((fx) => fx.stop()));
  await Promise.all(gates.splice(0).map((gate) => gate.close()));
});

/** Job states in which a watchdog will still run: waiting, or running now. */
const LIVE = ['scheduled', 'available', 'running', 'retryable', 'snoozed'];
const OUTCOMES: SimulatedOutcome[] = ['completed', 'noPickup', 'lostWebhook', 'lostWebhook', 'duplicateWebhook', 'temporaryUnavailable'];

/**
 * Random interleavings (seeded) of a batch's dial runs, its calls' results and its watchdogs: the placer
 * holds every call until the schedule lets it through, so a run may stand mid-way while the clock jumps
 * past its watchdog's due time and results come early, late (after the call timeout) or never. After every
 * step the invariant holds: each call out (its list position dialled, no completion in the round) belongs to
 * a live watchdog job of its round that covers its position and whose slot shard its call holds. In the end
 * every batch is Finalised, none Calling.
 */
describe('watchdog coverage under random interleavings', () => {
  for (const seed of [11, 29, 47]) {
    it(`EveryContactCallingIsCoveredByALiveWatchdogBoundToItsCall_AfterEveryStep_AndTheBatchFinalises_seed${seed}`, { timeout: 180_000 }, async () => {
      const rng = seededRng(seed);
      const gate = await placerGate();
      gates.push(gate);
      const fx = await callsFixture({
        seed,
        script: () => OUTCOMES[rng.int(0, OUTCOMES.length - 1)]!,
        // Some results come after the call timeout (600 s), and after the run's watchdog is due (620 s).
        resultDelayMs: () => rng.int(5, 900) * 1000,
        callTimeoutSeconds: 600,
        placerUrl: gate.placerUrl,
      });
      fixtures.push(fx);
      const contacts = numbers(12);
      const batchId = await fx.createBatch({ numbers: contacts, maxAttempts: 2, concurrencyLimit: rng.int(2, 4) });
      const held: HeldPlacement[] = [];

      /** Until the calls queue and the simulator are idle, and the dial run is idle or holding at the placer. */
      const steady = async () => {
        for (;;) {
          await fx.simulator.idle();
          await fx.queues.calls.idle();
          while (gate.pending() > 0) held.push(await gate.next());
          if ((fx.queues.dial.isIdle() || held.length > 0) && fx.queues.calls.isIdle() && fx.simulator.sending === 0) return;
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      };

      // A call is out while its position is behind the round's dial cursor and its contact has no
      // completion in the round; its watchdog is the round's last opened at or before that position.
      const checkCoverage = async (step: number) => {
        const batch = (await fx.store.getBatch(batchId))!;
        if (batch.status !== 'InProgress') return;
        const list = await fx.store.getListPage(batchId, batch.round, 0);
        const items = await fx.store.getContacts(batchId, list!.numbers);
        const watchdogs = (await fx.allJobs())
          .filter((j) => j.kind === 'calls.watchdog' && (j.args as RunWatchdogArgs).round === batch.round)
          .sort((x, y) => (x.args as RunWatchdogArgs).seq - (y.args as RunWatchdogArgs).seq);
        for (const [pos, contactNumber] of list!.numbers.entries()) {
          const item = items.get(contactNumber);
          if (!isDialled(batch, 0, pos) || (item && item.round >= batch.round)) continue;
          const where = `seed ${seed}, step ${step}, ${contactNumber} at position ${pos} of round ${batch.round}`;
          const owner = watchdogs.filter((j) => (j.args as RunWatchdogArgs).pos <= pos).at(-1);
          expect(owner?.state, `${where}: its watchdog ${owner?.id} is not live`).toBeOneOf(LIVE);
          const args = owner!.args as RunWatchdogArgs;
          expect(pos, where).toBeLessThan(args.pos + args.count);
          // Its call, once placed, is the one its position names, holding a slot of its watchdog's shard.
          const placed = fx.simulator.calls.find((c) => c.batchId === batchId && c.contactNumber === contactNumber && c.round === batch.round);
          if (placed) {
            expect(baseCallId(placed.callId), where).toBe(callIdFor(batchId, contactNumber, { round: batch.round, page: 0, pos }));
            expect(slotOfCall(placed.callId), where).toBe(args.shard);
          }
        }
      };

      let finishing = false;
      for (let step = 0; step < 2_000; step++) {
        await steady();
        await checkCoverage(step);
        const next = fx.clock.nextTimerAt();
        if (held.length === 0 && next === undefined) break;
        if (step === 150) finishing = true;
        const choice = rng.int(0, 9);
        if (held.length > 0 && (finishing || choice < 4)) {
          held.splice(rng.int(0, held.length - 1), 1)[0]!.release();
        } else if (next !== undefined && (finishing || choice < 8)) {
          fx.clock.set(Math.max(next, fx.clock.now()));
        } else if (!finishing) {
          // A stall: the clock jumps up to 700 s, past the due time of a watchdog whose run is held.
          fx.clock.advance(rng.int(1, 700) * 1000);
        }
      }

      const batch = (await fx.api('GET', `/v1/batches/${batchId}`)).body;
      expect(batch.status, `seed ${seed}`).toBe('Finalised');
      expect([...(await fx.contactViews(batchId)).values()].filter((c) => c.status === 'Calling')).toEqual([]);
      expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
    });
  }
});
