import { describe, expect, it } from 'vitest';
import { ALERTING_DISCARD_REASONS, supplierInvokeKind, supplierInvokePolicy } from '../../functions/calendar/kinds.ts';
import { retrySchedule, totalScheduleMs } from '../../functions/jobs/index.ts';

describe('supplier.invoke', () => {
  it('RetriesTwelveTimesOverAboutTwelveHoursAndAlertsWhenExhausted', () => {
    expect(retrySchedule(supplierInvokePolicy).map((row) => row.delayMs / 1000)).toEqual([5, 30, 120, 600, 1800, 3600, 7200, 7200, 7200, 7200, 7200]);
    expect(totalScheduleMs(supplierInvokePolicy)).toBe(42_155_000);
    expect(supplierInvokePolicy).toMatchObject({ maxAttempts: 12, jitter: 0.1, onExhausted: 'discard_alert' });
  });

  it('DeclaresItsDiscardReasonsAllOfWhichAlert', () => {
    expect(supplierInvokeKind.kind).toBe('supplier.invoke');
    expect([...supplierInvokeKind.discardReasons].sort()).toEqual(['credentials_refused', 'http_4xx']);
    expect([...ALERTING_DISCARD_REASONS].sort()).toEqual(['credentials_refused', 'http_4xx']);
  });

  it('TakesASettleOperationAndRefusesAnythingElse', () => {
    const args = { op: 'calendar.settle', tenantId: 't_acme', calendarId: 'sales', appointmentId: 'a_1', eventId: 'a'.repeat(64), deadline: '2026-03-02T15:00:02.500Z' };
    expect(supplierInvokeKind.args.safeParse(args).success).toBe(true);
    expect(supplierInvokeKind.args.safeParse({ ...args, op: 'calendar.insert' }).success).toBe(false);
    expect(supplierInvokeKind.args.safeParse({ ...args, eventId: 'ABCDEF' }).success).toBe(false);
    expect(supplierInvokeKind.args.safeParse({ ...args, extra: 1 }).success).toBe(false);
  });
});
