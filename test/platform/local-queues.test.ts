import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../functions/platform/clock.ts';
import { LocalQueue, LocalTransport } from '../../functions/platform/local/queues.ts';

describe('the local queues at stop', () => {
  it('DropAndCountWhatIsSentAfterStopAndLeaveNoTimerBehind', async () => {
    const clock = new ManualClock(Date.parse('2026-11-30T00:00:00Z'));
    const queue = new LocalQueue({ name: 'ops', clock, batchSize: 10, maxConcurrency: 2, visibilityMs: 60_000 });
    const transport = new LocalTransport([queue], clock);
    await transport.sendMessage('ops', '{"jobId":"a","seq":1}', 0);
    expect(queue.snapshot()).toMatchObject({ sent: 1, waiting: 1, droppedAtStop: 0 });

    transport.stop();
    await queue.stop();
    await transport.sendMessage('ops', '{"jobId":"b","seq":1}', 0);
    await transport.createSchedule('job-b-1', clock.now() + 3_600_000, 'ops', '{"jobId":"b","seq":1}');
    expect(queue.snapshot()).toMatchObject({ sent: 1, droppedAtStop: 1 });
    expect(transport.pendingSchedules()).toBe(0);
    expect(clock.nextTimerAt()).toBeUndefined();
  });
});

describe('the local queues deliver as Lambda invokes', () => {
  it('RunEachBatchOutsideTheAsyncContextOfWhoeverSentItOrScheduledIt', async () => {
    const clock = new ManualClock(Date.parse('2026-11-30T00:00:00Z'));
    const queue = new LocalQueue({ name: 'ops', clock, batchSize: 10, maxConcurrency: 2, visibilityMs: 60_000 });
    const transport = new LocalTransport([queue], clock);
    // What a worker's batch keeps in AsyncLocalStorage (the job counts' scope): it must not leak into the next batch.
    const scope = new AsyncLocalStorage<string>();
    const seen: (string | undefined)[] = [];
    queue.consume(async (event) => {
      for (const r of event.Records) seen.push(`${r.body}: ${scope.getStore() ?? 'no scope'}`);
      await Promise.resolve();
    });
    await scope.run('batch 1', async () => {
      await transport.sendMessage('ops', 'sent', 0);
      await transport.createSchedule('later', clock.now() + 60_000, 'ops', 'scheduled');
    });
    await queue.idle();
    clock.advance(60_000);
    await queue.idle();
    expect(seen).toEqual(['sent: no scope', 'scheduled: no scope']);
    transport.stop();
    await queue.stop();
  });
});
