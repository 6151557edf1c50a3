import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { defineKind, discard, handle, policy, schedule } from '../../functions/jobs/index.ts';
import type { JobHandler } from '../../functions/jobs/index.ts';
import { DISCARD_ALERT_METRIC, DISCARD_METRIC } from '../../functions/jobs/executor.ts';
import { ALERTING_DISCARD_REASONS, supplierInvokeKind } from '../../functions/calendar/kinds.ts';
import { jobsFixture } from '../support/jobs.ts';

/** A kind whose handler discards with the reason its args name; `http_4xx` alerts, `gone` does not. */
const alertingKind = defineKind({
  kind: 'test.alerting',
  queue: 'ops',
  policy: policy({ maxAttempts: 3, backoff: schedule([1]), onExhausted: 'discard' }),
  args: z.object({ reason: z.enum(['http_4xx', 'gone']) }),
  discardReasons: ['http_4xx', 'gone'],
  alertingReasons: ['http_4xx'],
  description: 'discards with the reason it is given',
});
const alerting = handle(alertingKind, async (args) => {
  throw discard(args.reason, `discarded: ${args.reason}`);
}) as unknown as JobHandler<unknown>;

describe('a kind’s alerting discard reasons', () => {
  it('AHandlersDiscardWithAnAlertingReasonAlertsAndOneWithAnotherReasonOnlyCounts', async () => {
    const fx = await jobsFixture({ handlers: [alerting], transport: 'local' });
    const loud = await fx.jobs.client.enqueue(alertingKind, { reason: 'http_4xx' });
    const quiet = await fx.jobs.client.enqueue(alertingKind, { reason: 'gone' });
    await fx.settle();

    for (const [id, reason] of [
      [loud.id, 'http_4xx'],
      [quiet.id, 'gone'],
    ] as const) {
      const row = await fx.jobs.store.mustGet(id);
      expect(row.state).toBe('discarded');
      expect(row.discardReason).toBe(reason);
      expect(row.attempt).toBe(1);
      expect(fx.metrics.total(DISCARD_METRIC, { kind: 'test.alerting', reason })).toBe(1);
    }
    // One alert: the http_4xx discard's. Without alertingReasons a handler's discard never alerts.
    expect(fx.metrics.total(DISCARD_ALERT_METRIC)).toBe(1);
  });

  it('AnAlertingReasonMustBeOneOfTheKindsDiscardReasons', () => {
    expect(() =>
      defineKind({ kind: 'test.misdeclared', queue: 'ops', policy: policy({ maxAttempts: 1, backoff: schedule([1]) }), args: z.object({}), discardReasons: ['gone'], alertingReasons: ['http_4xx'], description: 'x' }),
    ).toThrow(/alerting reason "http_4xx" is not a discard reason/);
  });

  it('SupplierInvokeAlertsOnEachOfItsHandlerDiscardReasons', () => {
    expect(supplierInvokeKind.alertingReasons).toEqual(ALERTING_DISCARD_REASONS);
    expect([...supplierInvokeKind.alertingReasons].sort()).toEqual(['credentials_refused', 'http_4xx']);
  });
});
