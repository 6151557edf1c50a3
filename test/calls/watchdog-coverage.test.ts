import { afterEach, describe, expect, it } from 'vitest';
import type { SimulatedOutcome } from '../../functions/calls/local/simulator.ts';
import { baseCallId, callIdFor, ContactStatus } from '../../functions/calls/model.ts';
import type { ContactRow } from '../../functions/calls/model.ts';
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
 * step the invariant holds: each contact Calling names a live watchdog job bound to its call (same round,
 * its call id, a list position the watchdog covers). In the end every batch is Finalised, none Calling.
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

      const checkCoverage = async (step: number) => {
        const calling = (await fx.callsItems()).filter((item): item is ContactRow & Record<string, unknown> => 'contactNumber' in item && item['status'] === ContactStatus.Calling);
        for (const contact of calling) {
          const where = `seed ${seed}, step ${step}, ${contact.contactNumber} in round ${contact.round}`;
          const job = contact.watchdogJobId ? await fx.jobs.store.get(contact.watchdogJobId) : undefined;
          expect(job?.state, `${where}: its watchdog ${contact.watchdogJobId} is not live`).toBeOneOf(LIVE);
          const args = job!.args as { round: number; page: number; pos: number; count: number };
          expect(args.round, where).toBe(contact.round);
          expect(baseCallId(contact.callId!), where).toBe(callIdFor(batchId, contact.contactNumber, contact.round));
          const page = await fx.store.getListPage(batchId, args.round, args.page);
          expect(page?.numbers.slice(args.pos, args.pos + args.count), where).toContain(contact.contactNumber);
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
      const states = await Promise.all(contacts.map((n) => fx.store.getContact(batchId, n)));
      expect(states.filter((c) => c?.status === ContactStatus.Calling)).toEqual([]);
      expect((await fx.api('GET', '/v1/tenants/acme')).body.activeCalls).toBe(0);
    });
  }
});
