import { CallsError } from '../errors.ts';
import type { BatchAction, ControlStatus } from './batch-control.ts';

/** Base of the batch-control errors (pause, resume, PATCH, start). The routes map them in the calls context's one error map. */
export class BatchControlError extends CallsError {
  override readonly name: string = 'BatchControlError';
}

/**
 * The batch's status does not allow the action (pause or resume of a Finalised, Cancelled or Deleted batch;
 * PATCH of a finished one; a new `startAt` for a batch that has started): 409, nothing written.
 */
export class BatchStatusConflictError extends BatchControlError {
  override readonly name = 'BatchStatusConflictError';
  readonly action: BatchAction;
  readonly status: ControlStatus;
  constructor(action: BatchAction, status: ControlStatus, detail?: string, options?: { cause?: unknown }) {
    super(`${action} is not allowed on a ${status} batch${detail ? `: ${detail}` : ''}`, options);
    this.action = action;
    this.status = status;
  }
}

/** A request field out of range for this batch or tenant (400 with the field's path, nothing written). */
export class BatchSettingError extends BatchControlError {
  override readonly name = 'BatchSettingError';
  /** The field's path in the request body (`startAt`, `maxConcurrentCalls`, `retryOn.2`). */
  readonly path: string;
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.path = path;
  }
}
