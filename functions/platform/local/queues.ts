import { randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { TimerClock } from '../clock.ts';
import type { RequestRecorder } from '../recorder.ts';

interface Message {
  id: string;
  body: string;
  visibleAt: number;
  sentAt: number;
  receiveCount: number;
}

/** What a local queue has done, for the ops API and benchmarks. */
export interface LocalQueueStats {
  name: string;
  sent: number;
  received: number;
  deleted: number;
  redelivered: number;
  /** Sent after stop() and dropped, like the messages waiting then: the next start's rescuer sends what is due. */
  droppedAtStop: number;
  waiting: number;
  inFlight: number;
}

export type SqsHandler = (event: SQSEvent) => Promise<SQSBatchResponse | void>;

/**
 * An in-process stand-in for one SQS queue and its Lambda event source mapping: message timers
 * (DelaySeconds), batches of up to `batchSize` handed to the same worker entry point that runs on AWS,
 * at most `maxConcurrency` batches at once, and SQS's visibility timeout for messages the handler reports
 * as failed (ReportBatchItemFailures) or that were in a batch whose handler threw.
 */
export class LocalQueue {
  readonly name: string;
  private readonly clock: TimerClock;
  private handler: SqsHandler | undefined;
  private readonly batchSize: number;
  private readonly maxConcurrency: number;
  private readonly visibilityMs: number;
  private readonly onError: (error: unknown) => void;
  /** Waiting messages, ordered by visibleAt. */
  private waiting: Message[] = [];
  private inFlight = 0;
  private cancelTimer: (() => void) | undefined;
  private timerAt: number | undefined;
  private stopped = false;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly stats = { sent: 0, received: 0, deleted: 0, redelivered: 0, droppedAtStop: 0 };

  constructor(options: {
    name: string;
    clock: TimerClock;
    batchSize: number;
    maxConcurrency: number;
    /** Visibility timeout in clock ms. */
    visibilityMs: number;
    onError?: (error: unknown) => void;
  }) {
    this.name = options.name;
    this.clock = options.clock;
    this.batchSize = options.batchSize;
    this.maxConcurrency = options.maxConcurrency;
    this.visibilityMs = options.visibilityMs;
    this.onError = options.onError ?? (() => undefined);
  }

  /** Attaches the consumer (the worker entry point); messages wait until one is attached. */
  consume(handler: SqsHandler): void {
    this.handler = handler;
    this.pump();
  }

  /**
   * After stop(), a send (a batch finishing its last jobs) is dropped, not refused: the job rows keep the
   * truth, and the next start's rescuer sends what is due. A clean stop is not an error.
   */
  send(body: string, delaySeconds = 0): void {
    if (this.stopped) {
      this.stats.droppedAtStop++;
      return;
    }
    const now = this.clock.now();
    this.insert({ id: randomUUID(), body, visibleAt: now + delaySeconds * 1000, sentAt: now, receiveCount: 0 });
    this.stats.sent++;
    this.pump();
  }

  /** Resolves when no message is visible now and no batch is running. */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Messages not yet deleted (waiting or in flight). */
  depth(): number {
    return this.waiting.length + this.inFlight;
  }

  snapshot(): LocalQueueStats {
    return { name: this.name, ...this.stats, waiting: this.waiting.length, inFlight: this.inFlight };
  }

  /** Stops delivering; waits for running batches. Waiting messages are dropped (the job rows keep the truth). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    while (this.inFlight > 0) await new Promise((r) => setTimeout(r, 10));
  }

  private insert(message: Message): void {
    // Binary search keeps `waiting` sorted by visibleAt (stable for equal times).
    let lo = 0;
    let hi = this.waiting.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.waiting[mid]!.visibleAt <= message.visibleAt) lo = mid + 1;
      else hi = mid;
    }
    this.waiting.splice(lo, 0, message);
  }

  private isIdle(): boolean {
    const first = this.waiting[0];
    return this.inFlight === 0 && (!first || first.visibleAt > this.clock.now() || !this.handler);
  }

  private pump(): void {
    if (this.stopped || !this.handler) return;
    const now = this.clock.now();
    while (this.inFlight < this.maxConcurrency && this.waiting[0] && this.waiting[0].visibleAt <= now) {
      let count = 0;
      while (count < this.waiting.length && count < this.batchSize && this.waiting[count]!.visibleAt <= now) count++;
      const batch = this.waiting.splice(0, count);
      void this.deliver(batch);
    }
    this.arm();
    if (this.isIdle()) this.idleWaiters.splice(0).forEach((resolve) => resolve());
  }

  private arm(): void {
    const next = this.waiting[0];
    if (!next || this.inFlight >= this.maxConcurrency) return;
    if (this.timerAt === next.visibleAt && this.cancelTimer) return;
    this.cancelTimer?.();
    this.timerAt = next.visibleAt;
    this.cancelTimer = this.clock.setTimer(next.visibleAt, () => {
      this.cancelTimer = undefined;
      this.timerAt = undefined;
      this.pump();
    });
  }

  private async deliver(batch: Message[]): Promise<void> {
    this.inFlight++;
    const handler = this.handler!;
    const now = this.clock.now();
    for (const m of batch) m.receiveCount++;
    this.stats.received += batch.length;
    let failed: Set<string>;
    try {
      const response = await handler({ Records: batch.map((m) => record(m, this.name, now)) });
      failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (error) {
      this.onError(error);
      failed = new Set(batch.map((m) => m.id));
    }
    this.inFlight--;
    for (const m of batch) {
      if (failed.has(m.id) && !this.stopped) {
        this.stats.redelivered++;
        this.insert({ ...m, visibleAt: this.clock.now() + this.visibilityMs });
      } else {
        this.stats.deleted++;
      }
    }
    this.pump();
  }
}

function record(m: Message, queue: string, now: number): SQSRecord {
  return {
    messageId: m.id,
    receiptHandle: `${m.id}:${m.receiveCount}`,
    body: m.body,
    attributes: {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: String(m.sentAt),
      SenderId: 'local',
      ApproximateFirstReceiveTimestamp: String(now),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:local:000000000000:${queue}`,
    awsRegion: 'local',
  };
}

/**
 * The local runtime's dispatch transport: SQS messages go to the in-process queues; one-time schedules
 * become timers that send their message when due and are then deleted, like EventBridge Scheduler's
 * ActionAfterCompletion DELETE. Creating a schedule whose name exists is a no-op, like a ConflictException.
 * It has the shape of the job layer's DispatchTransport (functions/jobs/dispatch.ts) without importing it:
 * platform sits below the job layer.
 */
export class LocalTransport {
  private readonly queues: Map<string, LocalQueue>;
  private readonly clock: TimerClock;
  private readonly schedules = new Map<string, { cancel: () => void; fire: () => void }>();
  private stopped = false;
  private readonly recorder: RequestRecorder | undefined;
  /** Counts by operation, comparable to the AWS request counts. */
  readonly counts = { sendMessage: 0, createSchedule: 0 };

  /** With a `recorder`, every send, schedule and firing is recorded as the AWS requests it stands for. */
  constructor(queues: Iterable<LocalQueue>, clock: TimerClock, recorder?: RequestRecorder) {
    this.queues = new Map([...queues].map((q) => [q.name, q]));
    this.clock = clock;
    this.recorder = recorder;
  }

  sendMessage(queue: string, body: string, delaySeconds: number): Promise<void> {
    this.counts.sendMessage++;
    this.recorder?.record({ service: 'SQS', operation: 'SendMessage', queue, bytes: Buffer.byteLength(body), delaySeconds });
    this.queue(queue).send(body, delaySeconds);
    return Promise.resolve();
  }

  createSchedule(name: string, at: number, queue: string, body: string): Promise<void> {
    this.counts.createSchedule++;
    const target = this.queue(queue);
    const exists = this.schedules.has(name);
    this.recorder?.record({ service: 'Scheduler', operation: 'CreateSchedule', queue, bytes: Buffer.byteLength(body), delayMs: at - this.clock.now(), created: !exists });
    // After stop(), like a send to a stopped queue: dropped, and no timer left to hold the process.
    if (this.stopped || exists) return Promise.resolve();
    const fire = () => {
      this.schedules.delete(name);
      // Scheduler's invocation, and the SendMessage it makes to the target queue.
      this.recorder?.record({ service: 'Scheduler', operation: 'Invoke', queue, source: 'scheduler' });
      this.recorder?.record({ service: 'SQS', operation: 'SendMessage', queue, bytes: Buffer.byteLength(body), delaySeconds: 0, bySchedule: true, source: 'scheduler' });
      target.send(body, 0);
    };
    const cancel = this.clock.setTimer(at, fire);
    this.schedules.set(name, { cancel, fire });
    return Promise.resolve();
  }

  /** Schedules waiting to fire. */
  pendingSchedules(): number {
    return this.schedules.size;
  }

  /**
   * Fires every waiting schedule now, as though its time had come; returns how many. A schedule outlives
   * the job that made it when the job moved on first (it fires, finds a stale wake-up, and is dropped):
   * the capacity benchmark fires them at the end of its day to count what they cost.
   */
  firePending(): number {
    const pending = [...this.schedules.values()];
    for (const { cancel, fire } of pending) {
      cancel();
      fire();
    }
    return pending.length;
  }

  stop(): void {
    this.stopped = true;
    for (const { cancel } of this.schedules.values()) cancel();
    this.schedules.clear();
  }

  private queue(name: string): LocalQueue {
    const queue = this.queues.get(name);
    if (!queue) throw new Error(`no local queue "${name}"`);
    return queue;
  }
}
