/**
 * Time, injected. Every decision that depends on "now" takes a {@link Clock}, so retry schedules,
 * snoozes, leases and the 5-day rules are tested exactly on a {@link ManualClock}, without sleeping.
 *
 * Times are epoch milliseconds in code and ISO-8601 UTC strings in storage.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Clock milliseconds per real millisecond (1 unless time is scaled). Durations that real work takes
   * (a lease, a visibility timeout) are multiplied by it to become clock time.
   */
  readonly speed?: number;
}

/** A clock that can also wake code up at a given time; the local runtime's queues and timers use it. */
export interface TimerClock extends Clock {
  /** Calls `fn` once when the clock reaches `atMs`; returns a function that cancels the timer. */
  setTimer(atMs: number, fn: () => void): () => void;
}

/** The wall clock. */
export const systemClock: TimerClock = {
  now: () => Date.now(),
  setTimer(atMs, fn) {
    const handle = setTimeout(fn, Math.max(0, atMs - Date.now()));
    return () => clearTimeout(handle);
  },
};

/**
 * A clock that runs `1 / scale` times faster than the wall clock, starting from `startMs`.
 * With scale 0.001 a 10 h backoff passes in 36 s; the local runtime uses it for TIME_SCALE.
 */
export class ScaledClock implements TimerClock {
  readonly scale: number;
  readonly speed: number;
  private readonly realStart: number;
  private readonly start: number;

  constructor(scale: number, startMs: number = Date.now()) {
    if (!(scale > 0)) throw new RangeError(`time scale must be > 0, got ${scale}`);
    this.scale = scale;
    this.speed = 1 / scale;
    this.realStart = Date.now();
    this.start = startMs;
  }

  now(): number {
    return this.start + Math.floor((Date.now() - this.realStart) / this.scale);
  }

  setTimer(atMs: number, fn: () => void): () => void {
    const realDelay = Math.max(0, (atMs - this.now()) * this.scale);
    const handle = setTimeout(fn, Math.ceil(realDelay));
    return () => clearTimeout(handle);
  }
}

interface ManualTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/**
 * A clock that moves only when told to. Timers fire, in time order, during {@link ManualClock.advance}
 * or {@link ManualClock.set}.
 *
 * @example
 * const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
 * clock.advance(5_000); // fires every timer due in the next 5 s
 */
export class ManualClock implements TimerClock {
  private current: number;
  private timers: ManualTimer[] = [];
  private seq = 0;

  constructor(startMs: number = Date.parse('2026-01-05T09:00:00.000Z')) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(atMs: number, fn: () => void): () => void {
    const timer = { at: atMs, seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves the clock forward by `ms`, firing due timers in order. */
  advance(ms: number): void {
    this.set(this.current + ms);
  }

  /** Moves the clock to `atMs` (never backwards), firing due timers in order. */
  set(atMs: number): void {
    if (atMs < this.current) throw new RangeError('a ManualClock never goes backwards');
    for (;;) {
      const due = this.timers
        .filter((t) => t.at <= atMs)
        .sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.at);
      due.fn();
    }
    this.current = atMs;
  }

  /** The time of the earliest pending timer, if any. */
  nextTimerAt(): number | undefined {
    return this.timers.reduce<number | undefined>((min, t) => (min === undefined || t.at < min ? t.at : min), undefined);
  }
}

/** ISO-8601 UTC string of an epoch-ms time, the form every stored timestamp takes. */
export const iso = (ms: number): string => new Date(ms).toISOString();

/** Converts a real duration (ms) to the clock's time. */
export const clockMs = (clock: Clock, realMs: number): number => Math.round(realMs * (clock.speed ?? 1));
