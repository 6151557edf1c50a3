import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/platform/clock.ts';
import { coversSend, DEFAULT_REQUEST_TIMEOUT_MS, LEASE_MS, leaseTerms, SEND_MARGIN_MS } from '../../functions/webhooks/lease.ts';
import type { EndpointRow } from '../../functions/webhooks/endpoint.ts';
import type { SweepReport } from '../../functions/webhooks/sweep.ts';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

const minutes = 60_000;

/** A manual clock that says it runs 200 times faster than real time (as the local runtime's TIME_SCALE 0.005 does). */
class FastClock extends ManualClock {
  readonly speed = 200;
}

describe('lease terms on the deliveries clock (pure)', () => {
  it('OnTheWallClock_ALeaseIsFiveMinutes_AndASendNeedsItsTimeoutAndAMarginLeft', () => {
    expect(leaseTerms(10_000)).toEqual({ sendMs: 10_000 + SEND_MARGIN_MS, leaseMs: LEASE_MS });
  });

  it('OnAClockRunningAHundredTimesFaster_BothGrowWithIt_SoALeaseStillOutlastsTwoSends', () => {
    const terms = leaseTerms(10_000, 100);
    expect(terms.sendMs).toBe((10_000 + SEND_MARGIN_MS) * 100);
    expect(terms.leaseMs).toBe(2 * terms.sendMs);
    expect(terms.leaseMs).toBeGreaterThan(LEASE_MS);
  });

  it('ALeaseCoversASendOnlyIfItRunsTheSendsWholeBoundPastNow', () => {
    const terms = leaseTerms(2_000);
    expect(coversSend(1_000 + terms.sendMs, 1_000, terms)).toBe(true);
    expect(coversSend(1_000 + terms.sendMs - 1, 1_000, terms)).toBe(false);
    expect(coversSend(undefined, 1_000, terms)).toBe(false);
  });
});

/**
 * Three events published to one endpoint: the first is a job and holds the lease, the two behind it wait
 * in its list with no job, to be sent by the holder within its run (the drain).
 */
async function backlog(fx: Awaited<ReturnType<typeof webhooksFixture>>, receiver: Receiver) {
  const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url() });
  const events = [];
  for (let i = 0; i < 3; i++) {
    fx.clock.advance(1);
    events.push(await fx.recordEvent('t', 'call.completed', { i }));
  }
  const holder = (await fx.webhooks.deps.store.getEndpoint(endpointId))!.holder!;
  expect(holder).toMatch(/^webhook\.deliver:/);
  expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toHaveLength(2);
  return { endpointId, events, holder };
}

describe('a holder keeps its lease while it works, on any clock', () => {
  it('OnAScaledClock_SendsThatTakeMuchOfALeaseEach_TheHolderRenewsBeforeTheOneItsLeaseWouldNotOutlast_SoTheSweepNeverFindsItFree', async () => {
    const receiver = await Receiver.start();
    const fx = await webhooksFixture({ requestTimeoutMs: 2_000, clock: new FastClock() });
    closers.push(() => receiver.close(), fx.close);
    const terms = fx.webhooks.deps.lease;
    // A send may take its 2 s timeout plus the margin, 200 times over on this clock: 13⅓ minutes; a lease twice that.
    expect(terms).toEqual(leaseTerms(2_000, 200));
    const { endpointId, events, holder } = await backlog(fx, receiver);
    // Each send takes 10 minutes of the clock (within its bound): three of them outlast the lease taken at
    // publishing (26⅔ min). During each one, what the endpoint's lease says, and a sweep.
    const during: Promise<{ at: number; row: EndpointRow | undefined; sweep: SweepReport }>[] = [];
    receiver.reply(async () => {
      fx.clock.advance(10 * minutes);
      const at = fx.clock.now();
      // The lease as committed while this send is out: read before the receiver answers, not raced against it.
      const row = await fx.webhooks.deps.store.getEndpoint(endpointId);
      during.push(fx.webhooks.sweep(at).then((sweep) => ({ at, row, sweep })));
      return { status: 200, delayMs: 100 };
    });
    const leasedUntil = Date.parse((await fx.webhooks.deps.store.getEndpoint(endpointId))!.busyUntil!);

    expect((await fx.run(holder)).result).toBe('completed');
    const seen = await Promise.all(during);
    expect(seen).toHaveLength(3);
    for (const { at, row, sweep } of seen) {
      expect(row?.holder).toBe(holder);
      expect(Date.parse(row!.busyUntil!)).toBeGreaterThan(at);
      expect(sweep.restarted).toBe(0);
    }
    // The third send would have outlasted the lease taken at publishing: the holder renewed it first, once.
    expect(Date.parse(seen[1]!.row!.busyUntil!)).toBe(leasedUntil);
    expect(Date.parse(seen[2]!.row!.busyUntil!)).toBeGreaterThan(leasedUntil);
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(events.map((e) => e.id));
    expect(receiver.maxInFlight).toBe(1);
    const endpoint = await fx.webhooks.deps.store.getEndpoint(endpointId);
    expect(endpoint?.holder).toBeUndefined();
    expect(endpoint?.delivered).toBe(3);
  });

  it('AHolderStalledPastItsLease_WhoseLeaseTheSweepGaveAway_SendsNothingMore_AndTheNewHolderSendsTheRestOnce', async () => {
    const receiver = await Receiver.start();
    // A drain budget longer than a lease (a setting: by default a drain ends long before its lease can), so
    // the stalled holder still has time to drain when it wakes up. The request timeout is the default one:
    // the holder's first send stays out for the whole sweep (below), in real time.
    const fx = await webhooksFixture({ requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS, drainBudgetMs: 30 * minutes });
    closers.push(() => receiver.close(), fx.close);
    expect(fx.webhooks.deps.lease.leaseMs).toBe(LEASE_MS);
    const { endpointId, events, holder } = await backlog(fx, receiver);
    // The first send stalls the holder past its whole lease (a frozen container), and the sweep gives the
    // expired lease to the oldest waiting delivery meanwhile: the receiver answers only once the sweep is
    // done, so it has surely run while the send was out (a sweep racing a delay loses on a loaded machine:
    // it reads each of the index's shards before it reaches this endpoint's).
    let swept: SweepReport | undefined;
    receiver.reply(async (_request, index) => {
      if (index === 0) {
        fx.clock.advance(LEASE_MS + minutes);
        swept = await fx.webhooks.sweep(fx.clock.now());
      }
      return { status: 200 };
    });

    expect((await fx.run(holder)).result).toBe('completed');
    expect(swept).toMatchObject({ looked: 1, restarted: 1 });
    // The stale holder sent its own event and nothing from the list: its renewal was refused.
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([events[0]!.id]);
    const successor = (await fx.webhooks.deps.store.getEndpoint(endpointId))!.holder!;
    expect(successor).not.toBe(holder);
    expect((await fx.run(successor)).result).toBe('completed');
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual(events.map((e) => e.id));
    expect(receiver.maxInFlight).toBe(1);
    const endpoint = await fx.webhooks.deps.store.getEndpoint(endpointId);
    expect(endpoint?.holder).toBeUndefined();
    expect(endpoint?.delivered).toBe(3);
    expect(await fx.webhooks.deps.store.waitListHead(endpointId, 5)).toEqual([]);
  });
});
