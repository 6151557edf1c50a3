import type { JobRow } from './row.ts';
import type { TransitionName } from './states.ts';

/** The rescuer's writes that are no state change (store.ts `CheckWrite`). */
type CheckWrite = 'touchDispatch' | 'recheck';

/** Base of every job-layer error. */
export class JobLayerError extends Error {
  override readonly name: string = 'JobLayerError';
}

/** No job has this id. */
export class JobNotFoundError extends JobLayerError {
  override readonly name = 'JobNotFoundError';
  readonly jobId: string;
  constructor(jobId: string) {
    super(`job ${jobId} not found`);
    this.jobId = jobId;
  }
}

/** A conditional write for a named transition was refused; carries the job as stored (if it exists). */
export class TransitionRefusedError extends JobLayerError {
  override readonly name: string = 'TransitionRefusedError';
  readonly transition: TransitionName | CheckWrite;
  readonly jobId: string;
  readonly current: JobRow | undefined;
  constructor(transition: TransitionName | CheckWrite, jobId: string, current: JobRow | undefined, options?: { cause?: unknown }) {
    super(
      current ? `${transition} refused for job ${jobId} in state ${current.state}` : `${transition} refused: job ${jobId} not found`,
      options,
    );
    this.transition = transition;
    this.jobId = jobId;
    this.current = current;
  }
}

/** Why a wake-up found nothing to run. */
export type ClaimRefusal = 'missing' | 'finished' | 'running' | 'stale' | 'not_due' | 'cancel_requested';

/** A claim was refused: the message was a duplicate, stale, early, or the job is gone. */
export class ClaimRefusedError extends TransitionRefusedError {
  override readonly name = 'ClaimRefusedError';
  readonly refusal: ClaimRefusal;
  constructor(jobId: string, current: JobRow | undefined, refusal: ClaimRefusal, options?: { cause?: unknown }) {
    super('claim', jobId, current, options);
    this.refusal = refusal;
    this.message = `claim of job ${jobId} refused: ${refusal}`;
  }
}

/** A worker tried to record an outcome on a claim it no longer holds (lease expired and rescued, or cancelled). */
export class LeaseLostError extends TransitionRefusedError {
  override readonly name = 'LeaseLostError';
}

/** A job was enqueued with an id that already exists (idempotent enqueue: the first one stands). */
export class DuplicateJobError extends JobLayerError {
  override readonly name = 'DuplicateJobError';
  readonly jobId: string;
  constructor(jobId: string) {
    super(`job ${jobId} already exists`);
    this.jobId = jobId;
  }
}

/** Arguments did not match the kind's schema; nothing was written. */
export class InvalidJobArgsError extends JobLayerError {
  override readonly name = 'InvalidJobArgsError';
  readonly kind: string;
  readonly issues: { path: string; message: string }[];
  constructor(kind: string, issues: { path: string; message: string }[]) {
    super(`invalid args for ${kind}: ${issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`);
    this.kind = kind;
    this.issues = issues;
  }
}
