import { expect } from 'vitest';
import { attemptKey, contactKey } from '../../functions/calls/model.ts';
import type { AttemptRow, ContactRow } from '../../functions/calls/model.ts';
import type { CallsFixture } from './calls.ts';

/** `GET /v1/batches/{id}/export` as a client reads it (test/calls/export*.test.ts), and completions written as the intake writes them. */

export interface ExportPage {
  status: number;
  text: string;
  contentType: string | null;
  /** The `rel="next"` URL, resolved against the request's. */
  next: string | undefined;
  /** The body's size as Lambda's JSON response carries it. */
  sentBytes: number;
}

/** One export request as the tenant (its API key), the body as text. */
export async function exportPage(fx: CallsFixture, tenantId: string, url: string): Promise<ExportPage> {
  const key = await fx.keyOf(tenantId);
  const response = await fetch(new URL(url, fx.url), { headers: { authorization: `Bearer ${key}` } });
  const text = await response.text();
  const link = response.headers.get('link');
  const target = link ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined;
  if (link && !target) throw new Error(`not a next link: ${link}`);
  return { status: response.status, text, contentType: response.headers.get('content-type'), next: target ? new URL(target, new URL(url, fx.url)).href : undefined, sentBytes: Buffer.byteLength(JSON.stringify(text)) };
}

/** Every page of an export, following `Link: rel="next"`. */
export async function exportAll(fx: CallsFixture, tenantId: string, url: string): Promise<ExportPage[]> {
  const pages: ExportPage[] = [];
  let next: string | undefined = url;
  while (next) {
    const page = await exportPage(fx, tenantId, next);
    expect(page.status, page.text).toBe(200);
    pages.push(page);
    next = page.next;
    if (pages.length > 1000) throw new Error('the export never ends');
  }
  return pages;
}

/** A completed call of round 1, its contact row and its attempt item, written as the intake writes them. */
export function completed(batchId: string, number: string, fields: Partial<AttemptRow> & { code: string }): [ContactRow, AttemptRow] {
  const at = '2026-01-05T09:05:00.000Z';
  const { code, ...artefacts } = fields;
  const contact: ContactRow = { ...contactKey(batchId, number), batchId, contactNumber: number, status: 'Completed', round: 1, attempts: 1, code, retryable: false, completedAt: at, updatedAt: at, ...artefacts };
  const attempt: AttemptRow = { ...attemptKey(batchId, number, 1), batchId, contactNumber: number, round: 1, callId: `call_x.r1.p0.0`, code, retryable: false, source: 'webhook', completedAt: at, ...artefacts };
  return [contact, attempt];
}

export async function write(fx: CallsFixture, items: readonly object[]): Promise<void> {
  const written = await fx.store.putItems(items as Record<string, unknown>[]);
  expect(written.unprocessed).toBe(0);
}
