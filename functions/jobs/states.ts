/**
 * Job states, in River's vocabulary. The job row in DynamoDB is the truth; a queue message only wakes a
 * job up.
 *
 * ```
 *               enqueue                     claim                 complete
 *  (new) ──► scheduled / available ──────────► running ─────────────────► completed
 *                  ▲    ▲   ▲                   │  │  │  discard / exhausted
 *                  │    │   └─── snooze ────────┘  │  └─────────────────► discarded ──┐
 *                  │    └─────── retry (backoff) ──┘      rescue (lease expired)       │
 *                  └──────────── retryNow (ops) ◄──────────────────────── cancelled ◄──┘
 * ```
 */
export const JobState = {
  /** Waiting for a time in the future. */
  scheduled: 'scheduled',
  /** Due now, waiting for a worker. */
  available: 'available',
  /** Claimed by a worker under a lease. */
  running: 'running',
  /** Failed; runs again when its backoff is due. */
  retryable: 'retryable',
  /** Asked to run later; spent no attempt. */
  snoozed: 'snoozed',
  /** Finished normally. Terminal. */
  completed: 'completed',
  /** Given up on: the handler discarded it or its attempts ran out. Terminal; ops may retry it. */
  discarded: 'discarded',
  /** Stopped by ops (or by its domain) before it finished. Terminal; ops may retry it. */
  cancelled: 'cancelled',
} as const;

export type JobState = (typeof JobState)[keyof typeof JobState];

export const allStates: readonly JobState[] = Object.values(JobState);

/** States from which a job waits for a wake-up at its scheduledAt. */
export const pendingStates = [JobState.scheduled, JobState.available, JobState.retryable, JobState.snoozed] as const;

/** States a job never leaves on its own. */
export const terminalStates = [JobState.completed, JobState.discarded, JobState.cancelled] as const;

export const isTerminal = (state: JobState): boolean => (terminalStates as readonly JobState[]).includes(state);
export const isPending = (state: JobState): boolean => (pendingStates as readonly JobState[]).includes(state);

/**
 * Every named state change and the states it may start from. The store builds each conditional write's
 * `state IN (...)` fragment from this table, so the table is the one authority on legal transitions.
 */
export const transitions = {
  /** A worker takes a due job under a lease (spends an attempt). */
  claim: { from: pendingStates, to: [JobState.running] },
  /** The handler finished normally. */
  complete: { from: [JobState.running], to: [JobState.completed] },
  /** The handler failed with attempts left: run again after the policy's backoff. */
  retry: { from: [JobState.running], to: [JobState.retryable] },
  /** The handler asked to run later: no attempt spent. */
  snooze: { from: [JobState.running], to: [JobState.snoozed] },
  /** The handler discarded the job, or its attempts ran out. */
  discard: { from: [JobState.running], to: [JobState.discarded] },
  /** The rescuer found a running job whose lease expired (its worker was lost). */
  rescue: { from: [JobState.running], to: [JobState.retryable, JobState.discarded] },
  /** Ops (or the job's own domain) stopped the job. */
  cancel: { from: [...pendingStates, JobState.running], to: [JobState.cancelled] },
  /** Ops asked to run the job now: a discarded or cancelled job comes back, a waiting one comes forward. */
  retryNow: {
    from: [JobState.discarded, JobState.cancelled, JobState.retryable, JobState.snoozed, JobState.scheduled],
    to: [JobState.available],
  },
  /** A domain runs a waiting job now (work handed on from the job before it); never a finished one. */
  wake: { from: [JobState.retryable, JobState.snoozed, JobState.scheduled], to: [JobState.available] },
} as const satisfies Record<string, { from: readonly JobState[]; to: readonly JobState[] }>;

export type TransitionName = keyof typeof transitions;

/** Whether `name` may start from `state`. */
export const canTransition = (name: TransitionName, state: JobState): boolean =>
  (transitions[name].from as readonly JobState[]).includes(state);
