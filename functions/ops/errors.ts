/** Base of every ops-context error. */
export class OpsError extends Error {
  override readonly name: string = 'OpsError';
}

/** An ops.probe attempt failing on purpose (it fails its first `failTimes` attempts). */
export class ProbeFailureError extends OpsError {
  override readonly name = 'ProbeFailureError';
  readonly attempt: number;
  constructor(attempt: number, failTimes: number, options?: { cause?: unknown }) {
    super(`probe failure ${attempt} of ${failTimes}`, options);
    this.attempt = attempt;
  }
}
