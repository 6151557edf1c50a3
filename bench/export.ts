import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { callsDefaults } from '../functions/calls/config.ts';
import { callsDeps } from '../functions/calls/deps.ts';
import { EXPORT_PAGE_BYTES, exportRoute } from '../functions/calls/export-api.ts';
import { batchIds, batchKey, contactDataKey, contactKey, LIST_PAGE_SIZE, listKey, tenantKey } from '../functions/calls/model.ts';
import type { BatchRow, ContactDataRow, ContactRow, ListPage, TenantRow } from '../functions/calls/model.ts';
import { CallsStore } from '../functions/calls/store.ts';
import { systemClock } from '../functions/platform/clock.ts';
import { createApiHandler, withOperatorCopies } from '../functions/platform/http.ts';
import { createLogger } from '../functions/platform/logger.ts';
import { seededRng } from '../functions/platform/rng.ts';
import { benchTables, fmt, percentile } from './support.ts';

/**
 * `GET /v1/batches/{id}/export` over a finalised batch of `n` contacts (default 100,000), every one with data
 * (BENCH_EXPORT_CONTACTS) (an externalId, three variables) and a completed call with typical artefacts (two URLs, a 300-byte
 * summary), seeded directly into DynamoDB Local. The route runs in its middy chain as Lambda would, without
 * HTTP (the operator copy: no API key to check), following `Link: rel="next"` to the end: pages, time per
 * page, the largest body as Lambda would send it, DynamoDB requests per page.
 */
export async function benchExport(endpoint: string, n = Number(process.env['BENCH_EXPORT_CONTACTS'] ?? 100_000)): Promise<{ lines: string[] }> {
  const { clients, tableNames, counter } = await benchTables(endpoint);
  const store = new CallsStore(clients.dynamo, tableNames.calls);
  const tenantId = 'bench';
  const batchId = batchIds.make(tenantId, randomUUID().replaceAll('-', ''));
  const at = new Date(systemClock.now()).toISOString();
  const numberOf = (i: number) => `+1415${String(1_000_000 + i)}`;

  const seedStart = performance.now();
  const tenant: TenantRow = { ...tenantKey(tenantId), tenantId, concurrencyLimit: 10, active: 0, createdAt: at, updatedAt: at };
  const pages = Math.ceil(n / LIST_PAGE_SIZE);
  const batch: BatchRow = {
    ...batchKey(batchId), batchId, tenantId, status: 'Finalised', round: 1, maxAttempts: 1, retry: { baseSeconds: 30, capSeconds: 3600 }, minConversationDurationSeconds: 10,
    contactCount: n, createdAt: at, updatedAt: at, finalisedAt: at, listPages: pages, roundSize: n, dialPage: pages, dialPos: 0, dialComplete: true,
    nQueued: 0, nCalling: 0, nCompleted: n, nRetryEligible: 0, byCode: { COMPLETED: n }, finPage: pages, finPos: 0, nextPages: 0, nextSize: 0,
    variableNames: ['first_name', 'amount', 'note'], hasContactData: true,
  };
  const items: Record<string, unknown>[] = [tenant as unknown as Record<string, unknown>, batch as unknown as Record<string, unknown>];
  for (let page = 0; page < pages; page++) {
    const list: ListPage = { ...listKey(batchId, 1, page), round: 1, page, numbers: Array.from({ length: Math.min(LIST_PAGE_SIZE, n - page * LIST_PAGE_SIZE) }, (_, k) => numberOf(page * LIST_PAGE_SIZE + k)) };
    items.push(list as unknown as Record<string, unknown>);
  }
  const rng = seededRng(26);
  for (let i = 0; i < n; i++) {
    const number = numberOf(i);
    const data: ContactDataRow = { ...contactDataKey(batchId, number), batchId, contactNumber: number, externalId: `crm-${i}`, variables: { first_name: `Name ${i}`, amount: rng.int(0, 999_999) / 100, note: i % 50 === 0 ? '=SUM(A1:A9)' : 'ok' } };
    const contact: ContactRow = {
      ...contactKey(batchId, number), batchId, contactNumber: number, status: 'Completed', round: 1, attempts: 1, code: 'COMPLETED', completedAt: at, updatedAt: at,
      recordingUrl: `https://recordings.example.com/${batchId}/${i}.mp3`, transcriptUrl: `https://recordings.example.com/${batchId}/${i}.txt`,
      summary: `The customer agreed to the new date, asked for a confirmation by mail, and said "thanks, bye". `.repeat(3), endedReason: 'customer-ended-call',
    };
    items.push(data as unknown as Record<string, unknown>, contact as unknown as Record<string, unknown>);
  }
  const written = await store.putItems(items, 16);
  if (written.unprocessed > 0) throw new Error(`seeding left ${written.unprocessed} items unwritten`);
  const seedSeconds = (performance.now() - seedStart) / 1000;

  const deps = callsDeps({
    store,
    jobs: undefined as never,
    ports: undefined as never,
    clock: systemClock,
    rng,
    logger: createLogger('bench'),
    config: { ...callsDefaults, placerUrl: undefined, callbackUrl: undefined, webhookSecret: undefined, callTimeoutSeconds: 600 },
  });
  // The operator copy alone: no API key to verify.
  const handler = createApiHandler(withOperatorCopies([exportRoute(() => deps)]).filter((r) => r.auth === 'iam'), createLogger('bench'));
  const invoke = async (path: string, query: Record<string, string>): Promise<APIGatewayProxyStructuredResultV2> => {
    const event = {
      version: '2.0', routeKey: '$default', rawPath: path, rawQueryString: new URLSearchParams(query).toString(), headers: { host: 'bench' }, queryStringParameters: query,
      requestContext: { http: { method: 'GET', path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' } }, isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;
    return await handler(event, {} as Context);
  };

  const lines = [`seeded ${fmt(n)} contacts (data, completed call, artefacts) in ${fmt(seedSeconds, 1)} s`];
  for (const format of ['csv', 'jsonl'] as const) {
    const times: number[] = [];
    let largest = 0;
    let rows = 0;
    let bytes = 0;
    let query: Record<string, string> | undefined = { format };
    const path = `/v1/ops/tenants/${tenantId}/batches/${batchId}/export`;
    counter.reset();
    const start = performance.now();
    while (query) {
      const t = performance.now();
      const answer = await invoke(path, query);
      times.push(performance.now() - t);
      if (answer.statusCode !== 200) throw new Error(`export page ${times.length}: ${answer.statusCode} ${String(answer.body).slice(0, 200)}`);
      const body = String(answer.body);
      largest = Math.max(largest, Buffer.byteLength(JSON.stringify(answer)));
      bytes += Buffer.byteLength(body);
      rows += body.split(format === 'csv' ? '\r\n' : '\n').length - 1;
      const link = answer.headers?.['link'];
      const cursor = typeof link === 'string' ? new URL(/^<([^>]+)>/.exec(link)![1]!, 'http://bench').searchParams.get('cursor') : null;
      query = cursor ? { format, cursor } : undefined;
    }
    const seconds = (performance.now() - start) / 1000;
    const requests = [...counter.counts.values()].reduce((a, b) => a + b, 0);
    if (rows - (format === 'csv' ? 1 : 0) !== n) throw new Error(`${format}: ${rows} lines for ${n} contacts`);
    lines.push(
      `${format}: ${fmt(times.length)} pages in ${fmt(seconds, 1)} s (${fmt(n / seconds)} contacts/s), ${fmt(bytes / 1e6, 1)} MB; ` +
        `page p50 ${fmt(percentile(times, 50))} ms, p99 ${fmt(percentile(times, 99))} ms; largest Lambda response ${fmt(largest / 1e6, 2)} MB (cut at ${fmt(EXPORT_PAGE_BYTES / 1e6, 2)}); ` +
        `${fmt(requests / times.length, 1)} DynamoDB requests a page`,
    );
  }
  return { lines };
}
