import { describe, expect, it } from 'vitest';
import { RETRYABLE_CODES } from '../../../functions/calls/codes.ts';
import {
  applyUnderlying,
  batchTransitions,
  canTransition,
  checkMaxConcurrentCalls,
  checkStartAt,
  ControlStatus,
  decidePatch,
  decidePause,
  decidePauseExpiry,
  decideResume,
  DEFAULT_RETRY_ON,
  effectiveConcurrency,
  initialStatus,
  MAX_PAUSE_MS,
  MAX_START_AHEAD_MS,
  pausableStatuses,
  pauseExpiresAt,
  retriedIn,
  retryOnSchema,
} from '../../../functions/calls/control/batch-control.ts';
import type { ControlState } from '../../../functions/calls/control/batch-control.ts';
import { BatchSettingError, BatchStatusConflictError } from '../../../functions/calls/control/errors.ts';
import { CallsError } from '../../../functions/calls/errors.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const DAY = 86_400_000;
const ALL = Object.values(ControlStatus);
const FINISHED = [ControlStatus.Finalised, ControlStatus.Cancelled, ControlStatus.Deleted];

/** The error a decision throws, so a test can look at it. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('the transition table: one authority on a batch’s status changes', () => {
  it('LetsPauseStartOnlyFromImportingScheduledPendingOrInProgress', () => {
    expect(ALL.filter((s) => canTransition('pause', s)).sort()).toEqual(['Importing', 'InProgress', 'Pending', 'Scheduled']);
  });

  it('LetsNothingDialAPausedBatch', () => {
    expect(canTransition('dial', ControlStatus.Paused)).toBe(false);
    expect(ALL.filter((s) => canTransition('dial', s)).sort()).toEqual(['InProgress', 'Pending']);
  });

  it('FinalisesAPausedBatchWhoseContactsAreAllFinal', () => {
    expect(canTransition('finalise', ControlStatus.Paused)).toBe(true);
    expect(canTransition('finalise', ControlStatus.Scheduled)).toBe(false);
  });

  it('CancelsOnlyAPausedBatchAndDeletesAnythingButADeletedOne', () => {
    expect(ALL.filter((s) => canTransition('cancel', s))).toEqual(['Paused']);
    expect(ALL.filter((s) => !canTransition('delete', s))).toEqual(['Deleted']);
  });

  it('NeverLeavesAFinishedStatusExceptByDelete', () => {
    for (const [name, { from }] of Object.entries(batchTransitions)) {
      if (name === 'delete') continue;
      for (const finished of FINISHED) expect(from as readonly string[], `${name} from ${finished}`).not.toContain(finished);
    }
  });
});

describe('pause and resume', () => {
  it.each(pausableStatuses)('PausesA %s BatchAndResumesItWhereItWas', (status) => {
    // A Scheduled batch always has its start time (ahead).
    const batch: ControlState = status === 'Scheduled' ? { status, startAt: NOW + DAY } : { status };
    const paused = decidePause(batch, NOW);
    expect(paused).toEqual({ change: 'pause', next: { ...batch, status: 'Paused', pausedFrom: status, pausedAt: NOW } });
    expect(decideResume(paused.next, NOW + 1000)).toEqual({ change: 'resume', next: batch });
  });

  it('IsIdempotent: pausing a paused batch and resuming a running one change nothing', () => {
    const paused: ControlState = { status: 'Paused', pausedFrom: 'InProgress', pausedAt: NOW - DAY };
    expect(decidePause(paused, NOW)).toEqual({ change: 'none', next: paused });
    for (const status of pausableStatuses) expect(decideResume({ status }, NOW)).toEqual({ change: 'none', next: { status } });
  });

  it.each(FINISHED)('Answers409ToPauseAndResumeOfA %s Batch', (status) => {
    for (const decide of [() => decidePause({ status }, NOW), () => decideResume({ status }, NOW)]) {
      const error = thrown(decide);
      expect(error).toBeInstanceOf(BatchStatusConflictError);
      expect(error).toBeInstanceOf(CallsError);
      expect((error as BatchStatusConflictError).status).toBe(status);
    }
    expect((thrown(() => decidePause({ status }, NOW)) as BatchStatusConflictError).action).toBe('pause');
    expect((thrown(() => decideResume({ status }, NOW)) as BatchStatusConflictError).message).toBe(`resume is not allowed on a ${status} batch`);
  });

  it('ResumesAScheduledBatchWhoseStartPassedWhilePausedAsPending', () => {
    const paused: ControlState = { status: 'Paused', pausedFrom: 'Scheduled', pausedAt: NOW - DAY, startAt: NOW - 1000 };
    expect(decideResume(paused, NOW).next.status).toBe('Pending');
    expect(decideResume({ ...paused, startAt: NOW + DAY }, NOW).next.status).toBe('Scheduled');
  });
});

describe('what happens to a batch on its own moves pausedFrom while it is paused', () => {
  it('EndsAnImportIntoPendingOrScheduled', () => {
    expect(applyUnderlying({ status: 'Importing' }, 'importDone', NOW)).toEqual({ status: 'Pending' });
    expect(applyUnderlying({ status: 'Importing', startAt: NOW + DAY }, 'importDone', NOW)).toEqual({ status: 'Scheduled', startAt: NOW + DAY });
    expect(applyUnderlying({ status: 'Paused', pausedFrom: 'Importing', pausedAt: NOW - 1 }, 'importDone', NOW)).toEqual({ status: 'Paused', pausedFrom: 'Pending', pausedAt: NOW - 1 });
  });

  it('StartsAScheduledBatch, OrOnlyItsPausedFrom', () => {
    expect(applyUnderlying({ status: 'Scheduled', startAt: NOW }, 'start', NOW)).toEqual({ status: 'Pending', startAt: NOW });
    expect(applyUnderlying({ status: 'Paused', pausedFrom: 'Scheduled', startAt: NOW }, 'start', NOW)).toEqual({ status: 'Paused', pausedFrom: 'Pending', startAt: NOW });
  });

  it('DoesNothingWhenAStartFiresLateIntoADeletedOrStartedBatch', () => {
    for (const status of ['Deleted', 'InProgress', 'Pending', 'Finalised', 'Cancelled'] as const) expect(applyUnderlying({ status }, 'start', NOW), status).toBeNull();
    expect(applyUnderlying({ status: 'InProgress' }, 'importDone', NOW)).toBeNull();
  });
});

describe('start time', () => {
  it('StartsScheduledForAStartAheadPendingOtherwiseImportingForALargeImport', () => {
    expect(initialStatus({ importing: false }, NOW)).toBe('Pending');
    expect(initialStatus({ importing: false, startAt: NOW }, NOW)).toBe('Pending');
    expect(initialStatus({ importing: false, startAt: NOW + 1 }, NOW)).toBe('Scheduled');
    expect(initialStatus({ importing: true, startAt: NOW + DAY }, NOW)).toBe('Importing');
  });

  it('RefusesAStartMoreThan30DaysAheadOnTheStartAtField', () => {
    expect(() => checkStartAt(NOW + MAX_START_AHEAD_MS, NOW)).not.toThrow();
    expect(() => checkStartAt(NOW - DAY, NOW)).not.toThrow();
    const error = thrown(() => checkStartAt(NOW + MAX_START_AHEAD_MS + 1, NOW));
    expect(error).toBeInstanceOf(BatchSettingError);
    expect((error as BatchSettingError).path).toBe('startAt');
    expect(MAX_START_AHEAD_MS).toBe(30 * DAY);
  });
});

describe('PATCH /v1/batches/{id}', () => {
  const LIMIT = 20;

  it.each(FINISHED)('Answers409OnA %s Batch', (status) => {
    const error = thrown(() => decidePatch({ status }, { maxConcurrentCalls: 2 }, LIMIT, NOW));
    expect(error).toBeInstanceOf(BatchStatusConflictError);
    expect((error as BatchStatusConflictError).action).toBe('patch');
  });

  it('RefusesAConcurrencyAboveTheTenantsLimitOnItsField', () => {
    expect(decidePatch({ status: 'InProgress' }, { maxConcurrentCalls: LIMIT }, LIMIT, NOW)).toEqual({ change: 'update', next: { status: 'InProgress' } });
    for (const bad of [LIMIT + 1, 0, 1.5]) {
      const error = thrown(() => decidePatch({ status: 'InProgress' }, { maxConcurrentCalls: bad }, LIMIT, NOW));
      expect((error as BatchSettingError).path, String(bad)).toBe('maxConcurrentCalls');
    }
  });

  it('ChangesTheWindowOrConcurrencyOfARunningOrPausedBatch', () => {
    expect(decidePatch({ status: 'InProgress' }, { callingWindow: { timezone: 'Europe/Berlin' } }, LIMIT, NOW).change).toBe('update');
    expect(decidePatch({ status: 'Paused', pausedFrom: 'InProgress' }, { maxConcurrentCalls: 3 }, LIMIT, NOW).change).toBe('update');
    expect(decidePatch({ status: 'Pending' }, {}, LIMIT, NOW)).toEqual({ change: 'none', next: { status: 'Pending' } });
  });

  it('ReschedulesABatchThatHasNotStarted', () => {
    expect(decidePatch({ status: 'Pending' }, { startAt: NOW + DAY }, LIMIT, NOW)).toEqual({ change: 'reschedule', next: { status: 'Scheduled', startAt: NOW + DAY } });
    expect(decidePatch({ status: 'Scheduled', startAt: NOW + DAY }, { startAt: NOW - 1 }, LIMIT, NOW)).toEqual({ change: 'reschedule', next: { status: 'Pending', startAt: NOW - 1 } });
    // Importing: it starts at the later of the new time and the import's end; its status stays.
    expect(decidePatch({ status: 'Importing' }, { startAt: NOW + DAY }, LIMIT, NOW)).toEqual({ change: 'update', next: { status: 'Importing', startAt: NOW + DAY } });
    // Paused: resume returns it to the status the new time gives.
    expect(decidePatch({ status: 'Paused', pausedFrom: 'Pending', pausedAt: NOW }, { startAt: NOW + DAY }, LIMIT, NOW)).toEqual({
      change: 'update',
      next: { status: 'Paused', pausedFrom: 'Scheduled', pausedAt: NOW, startAt: NOW + DAY },
    });
  });

  it('Answers409ToANewStartForABatchThatHasStarted', () => {
    for (const batch of [{ status: 'InProgress' }, { status: 'Paused', pausedFrom: 'InProgress' }] as ControlState[]) {
      const error = thrown(() => decidePatch(batch, { startAt: NOW + DAY }, LIMIT, NOW));
      expect(error).toBeInstanceOf(BatchStatusConflictError);
      expect((error as Error).message).toMatch(/has started/);
    }
  });

  it('ChecksEveryFieldBeforeDecidingAnything', () => {
    const error = thrown(() => decidePatch({ status: 'Pending' }, { startAt: NOW + 31 * DAY, maxConcurrentCalls: 5 }, LIMIT, NOW));
    expect((error as BatchSettingError).path).toBe('startAt');
  });
});

describe('a pause longer than 30 days cancels the batch', () => {
  const paused: ControlState = { status: 'Paused', pausedFrom: 'InProgress', pausedAt: NOW };

  it('CancelsAt30DaysIfStillInTheSamePause', () => {
    expect(pauseExpiresAt(NOW)).toBe(NOW + MAX_PAUSE_MS);
    expect(decidePauseExpiry(paused, NOW, NOW + MAX_PAUSE_MS - 1).change).toBe('none');
    expect(decidePauseExpiry(paused, NOW, NOW + MAX_PAUSE_MS)).toEqual({ change: 'cancel', next: { status: 'Cancelled', pausedAt: NOW } });
  });

  it('DoesNothingAfterAResumeOrForAnEarlierPause', () => {
    expect(decidePauseExpiry({ status: 'InProgress' }, NOW, NOW + MAX_PAUSE_MS).change).toBe('none');
    expect(decidePauseExpiry({ ...paused, pausedAt: NOW + DAY }, NOW, NOW + MAX_PAUSE_MS).change).toBe('none');
    expect(decidePauseExpiry({ status: 'Finalised' }, NOW, NOW + MAX_PAUSE_MS).change).toBe('none');
  });
});

describe('per-batch concurrency and retryOn', () => {
  it('NeverExceedsTheTenantsCurrentLimit', () => {
    expect(effectiveConcurrency(undefined, 10)).toBe(10);
    expect(effectiveConcurrency(4, 10)).toBe(4);
    expect(effectiveConcurrency(8, 5)).toBe(5); // the tenant's limit was lowered since
    expect(() => checkMaxConcurrentCalls(11, 10)).toThrow(BatchSettingError);
  });

  it('AcceptsASubsetOfTheRetryableCodes', () => {
    expect(retryOnSchema.parse(['NO_PICKUP', 'TIMEOUT'])).toEqual(['NO_PICKUP', 'TIMEOUT']);
    expect(retryOnSchema.parse([])).toEqual([]);
    expect([...DEFAULT_RETRY_ON].sort()).toEqual([...RETRYABLE_CODES].sort());
  });

  it('RefusesATerminalOrUnknownCodeOrARepeatWithItsPath', () => {
    const terminal = retryOnSchema.safeParse(['NO_PICKUP', 'COMPLETED']);
    expect(terminal.error?.issues.map((i) => i.path.join('.'))).toEqual(['1']);
    expect(retryOnSchema.safeParse(['SUPPRESSED']).success).toBe(false);
    expect(retryOnSchema.safeParse(['NO_PICKUP', 'NO_PICKUP']).success).toBe(false);
  });

  it('RetriesACodeOnlyIfTheBatchChoseIt', () => {
    expect(retriedIn(undefined, 'NO_PICKUP')).toBe(true);
    expect(retriedIn(undefined, 'COMPLETED')).toBe(false);
    expect(retriedIn(['TIMEOUT'], 'NO_PICKUP')).toBe(false);
    expect(retriedIn(['TIMEOUT'], 'TIMEOUT')).toBe(true);
    expect(retriedIn([], 'TIMEOUT')).toBe(false);
  });
});
