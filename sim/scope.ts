import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Who is running: a job's run inside a worker invocation, an API request, or a rescuer pass. The host
 * runs each under a {@link RunScope}; the fault injector reads it to match a plan's faults to "the dial's
 * second transaction" or "the intake's first write", and to make a crashed invocation stay dead.
 */

/**
 * One Lambda invocation (a queue worker's batch, an API request, a rescuer pass). A crash kills the whole
 * invocation: every run in it stops at its next request (see {@link Invocation.crash}).
 */
export class Invocation {
  readonly id: number;
  readonly fn: string;
  crashed = false;
  /** Why it died: the fault that killed it. */
  cause: string | undefined;
  /** Resolves when the invocation crashes (never, for one that ends normally). */
  readonly died: Promise<void>;
  private resolveDied!: () => void;

  constructor(id: number, fn: string) {
    this.id = id;
    this.fn = fn;
    this.died = new Promise((resolve) => (this.resolveDied = resolve));
  }

  /**
   * Kills the invocation, as a process killed at an I/O boundary: the request that found the crash is
   * not sent, and every run of the invocation hangs at its next request for good (its promises never
   * settle, so nothing after them runs). The host answers for the invocation as AWS would: the batch's
   * messages become visible again after the visibility timeout, an API request gets a 502.
   */
  crash(cause: string): void {
    if (this.crashed) return;
    this.crashed = true;
    this.cause = cause;
    this.resolveDied();
  }
}

/** A run: one job's execution (one queue record), one API request, or one rescuer pass. */
export interface RunScope {
  /** Unique in the host: the world records which run sent what. */
  id: number;
  where: 'job' | 'api' | 'rescuer';
  /** The job's kind, the API route (`POST /v1/calls/webhook`), or `rescuer`. */
  name: string;
  /** The job the record wakes (jobs only). */
  jobId?: string;
  invocation: Invocation;
  /** Requests (DynamoDB, SQS, Scheduler, SMTP) this run has sent so far, or tried to. */
  requests: number;
  /** Whether the last request was a write (a DynamoDB write, an SQS send, a schedule, a mail). */
  lastWasWrite: boolean;
  /** Requests sent when its last outbound side effect (a placed call, a delivery, a mail) completed; -1: none yet. */
  sideEffectAt: number;
}

/** The scopes of one simulated host. */
export class Scopes {
  private readonly storage = new AsyncLocalStorage<RunScope>();
  private invocations = 0;
  private runs = 0;
  /** Live runs by job id: the world tells them when their side effect reached it. */
  private readonly byJob = new Map<string, Set<RunScope>>();
  /** Live API runs by route: the calendar tells them when their insert reached it (sim/world/calendar-agent.ts). */
  private readonly byRoute = new Map<string, Set<RunScope>>();

  current(): RunScope | undefined {
    return this.storage.getStore();
  }

  invocation(fn: string): Invocation {
    return new Invocation(++this.invocations, fn);
  }

  /** Runs `fn` as a new run of `invocation`. */
  async run<T>(scope: Omit<RunScope, 'id' | 'requests' | 'lastWasWrite' | 'sideEffectAt'>, fn: () => Promise<T>): Promise<T> {
    const full: RunScope = { ...scope, id: ++this.runs, requests: 0, lastWasWrite: false, sideEffectAt: -1 };
    if (full.jobId) {
      const set = this.byJob.get(full.jobId) ?? new Set();
      set.add(full);
      this.byJob.set(full.jobId, set);
    }
    if (full.where === 'api') this.byRoute.set(full.name, new Set([...(this.byRoute.get(full.name) ?? []), full]));
    try {
      return await this.storage.run(full, fn);
    } finally {
      this.byRoute.get(full.name)?.delete(full);
      if (full.jobId) {
        const set = this.byJob.get(full.jobId);
        set?.delete(full);
        if (set?.size === 0) this.byJob.delete(full.jobId);
      }
    }
  }

  /**
   * A side effect of a request to `route` reached the world (the booking's insert reached the calendar):
   * marks every live run of the route, which the calendar agent's one-at-a-time tool requests make one.
   */
  routeSideEffect(route: string): void {
    for (const scope of this.byRoute.get(route) ?? []) if (!scope.invocation.crashed) scope.sideEffectAt = scope.requests;
  }

  /** A side effect of job `jobId` reached the world (its call, its delivery); returns the live runs of that job that may have sent it. */
  sideEffect(jobId: string, options: { andSuffixed?: boolean } = {}): number[] {
    const runs: number[] = [];
    // `andSuffixed`: the job's own runs and those of jobs named after it (`<jobId>:<suffix>`: a recovery's delivery).
    const scopes = options.andSuffixed ? [...this.byJob].filter(([id]) => id === jobId || id.startsWith(`${jobId}:`)).flatMap(([, set]) => [...set]) : [...(this.byJob.get(jobId) ?? [])];
    for (const scope of scopes) {
      // A dead run sends nothing; the request is a newer run's.
      if (scope.invocation.crashed) continue;
      scope.sideEffectAt = scope.requests;
      runs.push(scope.id);
    }
    return runs;
  }
}

/**
 * Counts what is in flight in the host (worker invocations, API requests, rescuer passes, results being
 * sent), so the runner knows when nothing moves and the clock may jump to the next timer.
 */
export class Activity {
  private active = 0;
  private epoch = 0;
  private waiters: (() => void)[] = [];

  /** Marks something as started; call the returned function when it ends. */
  begin(): () => void {
    this.active++;
    this.epoch++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.active--;
      this.epoch++;
      if (this.active === 0) this.waiters.splice(0).forEach((w) => w());
    };
  }

  /** Runs `fn` as activity. */
  async track<T>(fn: () => Promise<T>): Promise<T> {
    const end = this.begin();
    try {
      return await fn();
    } finally {
      end();
    }
  }

  get inFlight(): number {
    return this.active;
  }

  get generation(): number {
    return this.epoch;
  }

  /** Resolves when nothing is active. */
  idle(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** A promise that never settles: what a dead process's pending work amounts to. */
export const never = <T>(): Promise<T> => new Promise<T>(() => undefined);
