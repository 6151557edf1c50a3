import type { TimerClock } from '../functions/platform/clock.ts';

interface Timer {
  at: number;
  seq: number;
  label: string;
  fn: () => void;
}

/**
 * The simulation's clock: job time that moves only when the runner moves it, from one timer to the
 * next once nothing is in flight (a discrete-event clock, like functions/platform/clock.ts's
 * ManualClock, which it follows; it also says which timers wait, so the runner can tell a system at rest
 * from one waiting for a wake-up). Hours of job time pass in the real time their work takes.
 */
export class SimClock implements TimerClock {
  private current: number;
  private timers: Timer[] = [];
  private seq = 0;
  /** Clock ms per real ms, as a scaled local clock's (functions/platform/clock.ts): what real durations (a lease, a request timeout) become in job time. */
  readonly speed: number;

  constructor(startMs: number, speed = 1) {
    this.current = startMs;
    this.speed = speed;
  }

  now(): number {
    return this.current;
  }

  setTimer(atMs: number, fn: () => void, label = 'timer'): () => void {
    const timer = { at: atMs, seq: this.seq++, label, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves the clock to `atMs` (never backwards), firing due timers in time order. */
  set(atMs: number): void {
    if (atMs < this.current) throw new RangeError('the simulation clock never goes backwards');
    for (;;) {
      let due: Timer | undefined;
      for (const t of this.timers) if (t.at <= atMs && (!due || t.at < due.at || (t.at === due.at && t.seq < due.seq))) due = t;
      if (!due) break;
      const fired = due;
      this.timers = this.timers.filter((t) => t !== fired);
      this.current = Math.max(this.current, fired.at);
      fired.fn();
    }
    this.current = Math.max(this.current, atMs);
  }

  /** The earliest pending timer's time. */
  nextTimerAt(): number | undefined {
    let min: number | undefined;
    for (const t of this.timers) if (min === undefined || t.at < min) min = t.at;
    return min;
  }

  /** Labels of the pending timers (`rescuer`, `queue`, `schedule`, `placer`, …). */
  pendingLabels(): string[] {
    return this.timers.map((t) => t.label);
  }
}
