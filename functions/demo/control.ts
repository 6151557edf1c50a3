import * as z from 'zod';
import type { DemoApi } from './client.ts';

/**
 * The demo's campaign control and compliance (issue 27), through the public API as a client would: its
 * batch pauses once (`POST /v1/batches/{id}/pause`) as soon as a first call is done, stays paused for
 * at least {@link PAUSE_JOB_MS} of job time (until the demo's next look after it) and resumes (`…/resume`). While it
 * is paused, one number not yet called is put on the tenant's suppression list (`PUT /v1/suppressions/{number}`):
 * no dial commits during a pause, so the number chosen from a read is still uncalled when the entry commits (a
 * suppression sent while the dialer runs can lose that race and meet a number already called). What each step saw is kept
 * in the demo's state (a restart resumes a pause rather than pausing again) and checked at the end from
 * the API's own counts: the dials while paused (the contacts' dials summed at the pause and at the resume)
 * and the suppressed contact's dials after its suppression (its dials then and at the end).
 */

/** How long the demo's batch stays paused, in job time (TIME_SCALE 0.025: 7.5 s real). */
export const PAUSE_JOB_MS = 5 * 60_000;

export const controlState = z.object({
  pause: z
    .object({
      /** The batch's `pausedAt` (the runtime's job clock) and the demo's real time when the pause answered. */
      pausedAt: z.string(),
      realAt: z.number(),
      pausedFrom: z.string().nullable(),
      /** The contacts' dials summed once the pause had committed. */
      dialsAtPause: z.number(),
      resumedRealAt: z.number().optional(),
      dialsAtResume: z.number().optional(),
      resumedTo: z.string().optional(),
    })
    .optional(),
  suppression: z
    .object({
      number: z.string(),
      externalId: z.string().nullable(),
      /** The entry's `createdAt` (job clock). */
      at: z.string(),
      /** The contact as it was once the suppression had committed. */
      statusThen: z.string(),
      dialsThen: z.number(),
    })
    .optional(),
  /** Why a step did not happen (the batch went faster than the demo looked). */
  skipped: z.string().optional(),
});
export type ControlState = z.infer<typeof controlState>;

/** One contact as the demo's control reads it from `GET /v1/batches/{id}/contacts`. */
export interface ControlContact {
  contactNumber: string;
  externalId: string | null;
  status: string;
  code: string | null;
  attempts: number;
}

interface BatchSeen {
  status: string;
  pausedAt: string | null;
  pausedFrom: string | null;
  round: number;
  maxAttempts: number;
}

/** The suppressed contact as the batch ended, and the pause's figures: what the summary prints. */
export interface ControlSummary {
  pause: (ControlState['pause'] & { dialsWhilePaused: number | null; pausedJobMs: number | null }) | null;
  suppression: (NonNullable<ControlState['suppression']> & { final: Pick<ControlContact, 'status' | 'code' | 'attempts'> | null; dialsAfter: number | null }) | null;
  skipped: string | null;
}

const dials = (contacts: readonly ControlContact[]) => contacts.reduce((n, c) => n + c.attempts, 0);
const done = (c: ControlContact) => c.attempts > 0 && c.status !== 'Calling';

export interface ControlStep {
  tenant: DemoApi;
  batchId: string;
  batch: BatchSeen;
  contacts: readonly ControlContact[];
  /** Reads the batch's contacts again (after a pause or a suppression committed). */
  readContacts: () => Promise<ControlContact[]>;
  nowRealMs: number;
  timeScale: number;
  print: (line: string) => void;
}

/**
 * The next control step the batch is ready for, given one look at it: pause, resume, or suppress. Returns
 * the new state when it acted (the caller saves it), else undefined.
 */
export async function controlStep(state: ControlState, step: ControlStep): Promise<ControlState | undefined> {
  const { tenant, batchId, batch, contacts, print } = step;
  if (batch.status === 'Finalised') return undefined;
  if (!state.pause) {
    // A first call done: the campaign is under way, and most of its contacts still wait.
    if (batch.status !== 'InProgress' || !contacts.some(done)) return undefined;
    const paused = await tenant.post<BatchSeen>(`/v1/batches/${batchId}/pause`);
    const dialsAtPause = dials(await step.readContacts());
    print(`demo: POST /v1/batches/${batchId}/pause → ${paused.status} at ${paused.pausedAt ?? '?'} (from ${paused.pausedFrom ?? '?'}): no dial commits until the resume; ${dialsAtPause} dials so far, calls in flight finish`);
    return { ...state, pause: { pausedAt: paused.pausedAt ?? '', realAt: step.nowRealMs, pausedFrom: paused.pausedFrom, dialsAtPause } };
  }
  if (state.pause.resumedRealAt === undefined) {
    if (!state.suppression && !state.skipped) return suppress(state, { ...step, contacts: await step.readContacts() });
    if (step.nowRealMs - state.pause.realAt < PAUSE_JOB_MS * step.timeScale) return undefined;
    // The dials counted before the resume is sent: any dial after the pause and before now would show here.
    const dialsAtResume = dials(await step.readContacts());
    const resumed = await tenant.post<BatchSeen>(`/v1/batches/${batchId}/resume`);
    print(`demo: POST /v1/batches/${batchId}/resume → ${resumed.status}; dials while paused: ${dialsAtResume - state.pause.dialsAtPause}`);
    return { ...state, pause: { ...state.pause, resumedRealAt: step.nowRealMs, dialsAtResume, resumedTo: resumed.status } };
  }
  if (!state.suppression && !state.skipped) return suppress(state, step);
  return undefined;
}

/** Suppresses the number the dialer reaches last: one the batch has not called yet, else one waiting for another round. */
async function suppress(state: ControlState, step: ControlStep): Promise<ControlState> {
  const { tenant, batch, contacts, print } = step;
  {
    // Read while the batch is paused (the usual path), a contact still Queued with no dial cannot be dialled before the entry commits.
    const queued = contacts.filter((c) => c.status === 'Queued' && c.attempts === 0);
    const retrying = batch.round < batch.maxAttempts ? contacts.filter((c) => c.status === 'RetryEligible') : [];
    const chosen = queued.at(-1) ?? retrying.at(-1);
    if (!chosen) {
      print('demo: no contact left to call: the suppression step is skipped');
      return { ...state, skipped: 'every contact had been called for the last time before the demo could suppress one' };
    }
    const entry = await tenant.put<{ createdAt: string }>(`/v1/suppressions/${encodeURIComponent(chosen.contactNumber)}`, { reason: 'demo: the person asked not to be called' });
    const then = (await step.readContacts()).find((c) => c.contactNumber === chosen.contactNumber) ?? chosen;
    print(`demo: PUT /v1/suppressions/${chosen.contactNumber} (${chosen.externalId ?? 'no externalId'}) at ${entry.createdAt}: ${then.status} with ${then.attempts} dials; never dialled again`);
    return { ...state, suppression: { number: chosen.contactNumber, externalId: chosen.externalId, at: entry.createdAt, statusThen: then.status, dialsThen: then.attempts } };
  }
}

/** The control's figures at the end: dials while paused, and the suppressed contact's final state and dials since. */
export function controlSummary(state: ControlState, contacts: readonly ControlContact[], timeScale: number): ControlSummary {
  const { pause, suppression } = state;
  const final = suppression ? contacts.find((c) => c.contactNumber === suppression.number) : undefined;
  return {
    pause: pause
      ? {
          ...pause,
          dialsWhilePaused: pause.dialsAtResume === undefined ? null : pause.dialsAtResume - pause.dialsAtPause,
          pausedJobMs: pause.resumedRealAt === undefined ? null : (pause.resumedRealAt - pause.realAt) / timeScale,
        }
      : null,
    suppression: suppression
      ? { ...suppression, final: final ? { status: final.status, code: final.code, attempts: final.attempts } : null, dialsAfter: final ? final.attempts - suppression.dialsThen : null }
      : null,
    skipped: state.skipped ?? null,
  };
}

/** The summary's lines about the pause and the suppression. */
export function controlLines(s: ControlSummary): string[] {
  const lines: string[] = [];
  const p = s.pause;
  if (!p) lines.push('  pause: none (the batch finished before the demo paused it)');
  else {
    const length = p.pausedJobMs === null ? 'not resumed' : `${Math.round(p.pausedJobMs / 60_000)} min of job time (${((p.resumedRealAt! - p.realAt) / 1000).toFixed(1)} s real)`;
    lines.push(`  pause: paused at ${p.pausedAt} from ${p.pausedFrom ?? '?'}, resumed to ${p.resumedTo ?? '?'} after ${length}; dials while paused: ${p.dialsWhilePaused ?? '?'}`);
  }
  const q = s.suppression;
  if (!q) lines.push(`  suppression: none${s.skipped ? ` (${s.skipped})` : ''}`);
  else {
    const after = q.final ? `${q.final.status}${q.final.code ? ` ${q.final.code}` : ''} with ${q.final.attempts} dials` : 'not listed';
    const verdict = q.dialsAfter === 0 ? 'no call after the suppression' : q.dialsAfter === null ? 'its calls after it unknown' : `${q.dialsAfter} calls after the suppression`;
    lines.push(`  suppression: ${q.number} (${q.externalId ?? 'no externalId'}) suppressed at ${q.at} while ${q.statusThen} with ${q.dialsThen} dials; ended ${after}: ${verdict}`);
  }
  return lines;
}
