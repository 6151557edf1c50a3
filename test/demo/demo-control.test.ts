import { describe, expect, it } from 'vitest';
import { DemoApi } from '../../functions/demo/client.ts';
import { controlLines, controlStep, controlSummary, PAUSE_JOB_MS } from '../../functions/demo/control.ts';
import type { ControlContact, ControlState, ControlStep } from '../../functions/demo/control.ts';

const contact = (i: number, status: string, attempts: number, code: string | null = null): ControlContact => ({ contactNumber: `+1555010${String(i).padStart(4, '0')}`, externalId: `crm-${1001 + i}`, status, code, attempts });

describe('the demo pauses its batch once and suppresses one number', () => {
  it('CountsTheDialsWhilePausedAndTheSuppressedContactsDialsSinceFromTheApisCounts', () => {
    const state: ControlState = {
      pause: { pausedAt: '2026-12-03T16:00:00.000Z', realAt: 1_000, pausedFrom: 'InProgress', dialsAtPause: 6, resumedRealAt: 8_500, dialsAtResume: 6, resumedTo: 'InProgress' },
      suppression: { number: contact(39, 'Queued', 0).contactNumber, externalId: 'crm-1040', at: '2026-12-03T16:06:00.000Z', statusThen: 'Queued', dialsThen: 0 },
    };
    const summary = controlSummary(state, [contact(0, 'Completed', 2, 'COMPLETED'), contact(39, 'Suppressed', 0, 'SUPPRESSED')], 0.025);
    expect(summary.pause).toMatchObject({ dialsWhilePaused: 0, pausedJobMs: 300_000 });
    expect(summary.suppression).toMatchObject({ final: { status: 'Suppressed', code: 'SUPPRESSED', attempts: 0 }, dialsAfter: 0 });
    expect(controlLines(summary)).toEqual([
      '  pause: paused at 2026-12-03T16:00:00.000Z from InProgress, resumed to InProgress after 5 min of job time (7.5 s real); dials while paused: 0',
      '  suppression: +15550100039 (crm-1040) suppressed at 2026-12-03T16:06:00.000Z while Queued with 0 dials; ended Suppressed SUPPRESSED with 0 dials: no call after the suppression',
    ]);
  });

  it('ReportsADialWhilePausedAndACallAfterTheSuppressionWhenTheCountsShowThem', () => {
    const state: ControlState = {
      pause: { pausedAt: 'p', realAt: 0, pausedFrom: 'InProgress', dialsAtPause: 6, resumedRealAt: 1, dialsAtResume: 7, resumedTo: 'InProgress' },
      suppression: { number: contact(5, 'RetryEligible', 1).contactNumber, externalId: 'crm-1006', at: 's', statusThen: 'RetryEligible', dialsThen: 1 },
    };
    const lines = controlLines(controlSummary(state, [contact(5, 'Completed', 2, 'COMPLETED')], 1));
    expect(lines[0]).toMatch(/dials while paused: 1$/);
    expect(lines[1]).toMatch(/ended Completed COMPLETED with 2 dials: 1 calls after the suppression$/);
  });

  it('WaitsForAFirstCallDoneAndForThePausesLengthInJobTimeBeforeItActs', async () => {
    // No step here may send a request: the API's address answers nothing.
    const step = (over: Partial<ControlStep>): ControlStep => ({
      tenant: new DemoApi('http://127.0.0.1:9'),
      batchId: 'b_demo.00',
      batch: { status: 'InProgress', pausedAt: null, pausedFrom: null, round: 1, maxAttempts: 3 },
      contacts: [contact(0, 'Calling', 1), contact(1, 'Queued', 0)],
      readContacts: () => Promise.reject(new Error('not read')),
      nowRealMs: 10_000,
      timeScale: 0.01,
      print: () => undefined,
      ...over,
    });
    expect(await controlStep({}, step({}))).toBeUndefined();
    expect(await controlStep({}, step({ batch: { status: 'Finalised', pausedAt: null, pausedFrom: null, round: 3, maxAttempts: 3 } }))).toBeUndefined();
    // Paused, its number suppressed (the demo suppresses while the batch is paused): the resume waits for the pause's length.
    const paused: ControlState = {
      pause: { pausedAt: 'p', realAt: 10_000, pausedFrom: 'InProgress', dialsAtPause: 1 },
      suppression: { number: contact(1, 'Queued', 0).contactNumber, externalId: null, at: 's', statusThen: 'Queued', dialsThen: 0 },
    };
    expect(await controlStep(paused, step({ nowRealMs: 10_000 + PAUSE_JOB_MS * 0.01 - 1 }))).toBeUndefined();
  });
});
