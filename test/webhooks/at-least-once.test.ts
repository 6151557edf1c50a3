import { afterEach, describe, expect, it } from 'vitest';
import { operatorScope } from '../../functions/platform/tenancy.ts';
import { Receiver, webhooksFixture } from '../support/webhooks.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** Blocks the process's event loop for `ms` of real time, as a starved or collecting machine does. */
function stall(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // busy: nothing else in this process runs meanwhile
  }
}

/**
 * What a stalled machine does to exactly-once (why one-in-flight.test.ts can see one request too many under a
 * full suite's load, and never alone): a delivery whose request reached the receiver but whose answer the
 * sender read after its request timeout is a failed attempt, retried, so the receiver gets that event twice,
 * with the same webhook-id to deduplicate by. No delivery is ever sent twice without a failed attempt.
 */
describe('at least once: a stall past the request timeout sends one event twice', () => {
  it('AStallWhileTheReceiverAnswers_MakesThatAttemptATimeout_AndItsEventArrivesTwiceWithTheSameWebhookId_TheOthersOnce', async () => {
    const receiver = await Receiver.start();
    const fx = await webhooksFixture({ transport: 'local', requestTimeoutMs: 300 });
    closers.push(() => receiver.close(), fx.close);
    // The fifth request stalls the whole process (receiver and sender alike) past the sender's timeout before it is answered.
    receiver.reply((_request, index) => {
      if (index === 4) stall(600);
      return { status: 200 };
    });
    const { endpointId } = await fx.webhooks.endpoints.register(operatorScope('t'), { url: receiver.url() });
    const events = [];
    for (let i = 0; i < 10; i++) events.push(await fx.recordEvent('t', 'call.completed', { i }));
    await fx.settle(3_600_000);

    const ids = receiver.requests.map((r) => r.headers['webhook-id']);
    expect(receiver.requests).toHaveLength(11);
    const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
    expect(twice).toEqual([ids[4]]);
    expect(new Set(ids)).toEqual(new Set(events.map((e) => e.id)));
    // The deliveries that have a job (a delivery sent within another's run and delivered has none).
    const rows = await fx.deliveryRows(events, endpointId);
    expect(rows.every((r) => r.state === 'completed')).toBe(true);
    // Exactly one delivery spent a second attempt: the one whose first attempt timed out (a job from then on).
    const retried = rows.filter((r) => r.attempt === 2);
    expect(retried.map((r) => (r.args as { eventId: string }).eventId)).toEqual([ids[4]]);
    expect(retried[0]!.attempts[0]?.error).toMatch(/timeout|aborted/i);
    expect(receiver.maxInFlight).toBe(1);
  }, 60_000);
});
