import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { iso, systemClock } from '../functions/platform/clock.ts';
import { createLogger } from '../functions/platform/logger.ts';
import { MemoryMetrics } from '../functions/platform/metrics.ts';
import { seededRng } from '../functions/platform/rng.ts';
import { defaultPolicy, defineKind, handle } from '../functions/jobs/index.ts';
import type { JobHandler, JobRow } from '../functions/jobs/index.ts';
import type { JobStore } from '../functions/jobs/store.ts';
import { createLocalHost } from '../functions/local/host.ts';
import { benchTables, fmt, pool } from './support.ts';

/** A kind whose jobs a crash wave leaves running: the rescuer prices their lost attempt by its policy. */
export const crashedKind = defineKind({ kind: 'bench.crashed', queue: 'ops', policy: defaultPolicy, args: z.object({ i: z.number() }), description: 'left running by a crash' });
export const crashedHandler = handle(crashedKind, async () => undefined) as unknown as JobHandler<unknown>;

/**
 * Writes `n` jobs as a crash wave leaves them: claimed at `claimedAt` (due then, first attempt), their
 * workers gone, their leases ending when their queue's lease would (which is when their byCheck entry
 * comes due: a claim leaves the entry where the enqueue put it). The rows are the store's own (its insert
 * item, then what a claim sets), written 25 at a time with BatchWriteItem to build the backlog fast.
 * Returns their ids and when their leases end.
 */
export async function seedExpiredLeases(db: DynamoDBDocumentClient, store: JobStore, n: number, claimedAt: number): Promise<{ ids: string[]; leaseUntil: number }> {
  const leaseUntil = store.checkDueBy(crashedKind.queue, claimedAt);
  const rows: JobRow[] = Array.from({ length: n }, (_, i) => {
    const id = `crashed-${String(i).padStart(6, '0')}`;
    const item = store.insertItem({ id, kind: crashedKind.kind, queue: crashedKind.queue, args: { i }, maxAttempts: defaultPolicy.maxAttempts, scheduledAt: claimedAt, now: claimedAt, counted: true }).Put!.Item as JobRow;
    return { ...item, state: 'running', prevState: 'available', attempt: 1, leaseToken: `lost-${i}`, leaseUntil: iso(leaseUntil), attemptedAt: iso(claimedAt) };
  });
  const chunks = Array.from({ length: Math.ceil(n / 25) }, (_, c) => rows.slice(c * 25, c * 25 + 25));
  await pool(chunks.length, 8, async (c) => {
    let items = chunks[c]!.map((row) => ({ PutRequest: { Item: row } }));
    // DynamoDB Local processes every item; the loop is for the contract (a partial write comes back).
    while (items.length > 0) {
      const result = await db.send(new BatchWriteCommand({ RequestItems: { [store.tableName]: items } }));
      items = (result.UnprocessedItems?.[store.tableName] ?? []) as typeof items;
    }
  });
  return { ids: rows.map((row) => row.id), leaseUntil };
}

export interface RescueBenchResult {
  lines: string[];
  jobs: number;
  passes: number;
  seconds: number;
  jobsPerSecond: number;
}

/**
 * A crash wave: `n` jobs left running with expired leases, rescued by rescuer passes of `budgetMs` each
 * (its default on AWS is 40 s; smaller here so the backlog takes several passes, each continuing from the
 * watermark the last one left). Reports the passes and the time the rescue took.
 */
export async function benchRescue(endpoint: string, n = 10_000, budgetMs = 5_000): Promise<RescueBenchResult> {
  const { clients, tableNames } = await benchTables(endpoint);
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock: systemClock,
    rng: seededRng(1),
    logger: createLogger('bench'),
    metrics: new MemoryMetrics(),
    transport: { sendMessage: () => Promise.resolve(), createSchedule: () => Promise.resolve(), deleteSchedule: () => Promise.resolve() },
    workers: [],
  });
  // Claimed an hour ago: every lease has run out.
  await seedExpiredLeases(clients.dynamo, host.jobs.store, n, Date.now() - 3600_000);
  const rescuer = host.jobs.rescuer([crashedHandler], 180_000, { budgetMs });
  const started = performance.now();
  let passes = 0;
  let rescued = 0;
  for (;;) {
    const report = await rescuer.run();
    passes++;
    rescued += report.expired;
    if (report.caughtUp || passes > 1000) break;
  }
  const seconds = (performance.now() - started) / 1000;
  await host.stop();
  const lines = [
    `rescue of a crash wave     ${fmt(rescued)} of ${fmt(n)} expired leases rescued in ${fmt(seconds, 1)} s over ${passes} rescuer passes of ≤ ${fmt(budgetMs / 1000)} s (${fmt(rescued / seconds)} jobs/s; each pass goes on from the last one's watermark)`,
  ];
  return { lines, jobs: rescued, passes, seconds, jobsPerSecond: rescued / seconds };
}
