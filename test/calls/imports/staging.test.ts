import { inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { Contact } from '../../../functions/calls/contacts/contact.ts';
import { chunkOf, MAX_CHUNK_BYTES, Stager, STAGE_SHARDS } from '../../../functions/calls/imports/staging.ts';
import type { StagedChunk } from '../../../functions/calls/imports/staging.ts';
import type { CallsStore } from '../../../functions/calls/store.ts';
import { HttpError } from '../../../functions/platform/http.ts';
import { seededRng } from '../../../functions/platform/rng.ts';

const BATCH = 'b_acme.0123456789abcdef0123456789abcdef';

/** A store that keeps what putItems is given (and leaves `unprocessed` items of each request unwritten). */
function keepingStore(unprocessed = 0) {
  const written: StagedChunk[] = [];
  const store = {
    putItems: (items: readonly Record<string, unknown>[]) => {
      written.push(...(items as unknown as StagedChunk[]));
      return Promise.resolve({ unprocessed, requests: Math.ceil(items.length / 25) });
    },
  } as unknown as CallsStore;
  return { store, written };
}

/** Contacts whose variables barely compress (random hex), up to 4 KB each. */
function heavyContacts(n: number): Contact[] {
  const rng = seededRng(3);
  const hex = (length: number) => Array.from({ length }, () => rng.int(0, 15).toString(16)).join('');
  return Array.from({ length: n }, (_, i) => ({ number: `+1415555${String(i).padStart(4, '0')}`, numberValid: true, variables: { a: hex(1900), b: hex(1900) } }));
}

describe('staged chunks', () => {
  it('CutsChunksByBytesSoEveryItemStaysUnderTheLimitAndKeepsTheOrder', async () => {
    const { store, written } = keepingStore();
    const stager = new Stager(store, BATCH, Date.parse('2026-01-05T09:00:00Z'));
    const contacts = heavyContacts(1_200);
    for (let i = 0; i < contacts.length; i += 500) await stager.add(contacts.slice(i, i + 500));
    const starts = await stager.finish();
    expect(written.length).toBe(starts.length);
    expect(written.length).toBeGreaterThan(5);
    for (const chunk of written) expect(chunk.contacts.byteLength).toBeLessThanOrEqual(MAX_CHUNK_BYTES);
    // In order, each chunk's first index where the one before ended; spread over the shards.
    expect(written.map((c) => c.first)).toEqual(starts);
    const back = written.flatMap((c) => JSON.parse(inflateRawSync(c.contacts).toString('utf8')) as Contact[]);
    expect(back).toEqual(contacts);
    expect(new Set(written.map((c) => c.pk)).size).toBe(Math.min(STAGE_SHARDS, written.length));
    expect(written.every((c) => c.pk.startsWith('TENANT#acme#BATCH#'))).toBe(true);
  });

  it('ChunkOfFindsTheChunkHoldingAnIndex', () => {
    const starts = [0, 700, 1_400, 2_000];
    expect([0, 699, 700, 1_399, 1_400, 1_999, 2_000, 2_500].map((i) => chunkOf(starts, i))).toEqual([0, 0, 1, 1, 2, 2, 3, 3]);
    expect(chunkOf([0], 123)).toBe(0);
  });

  it('AChunkDynamoDbLeftUnprocessedFailsTheRequestWith503', async () => {
    const { store } = keepingStore(1);
    const stager = new Stager(store, BATCH, 0);
    await stager.add(heavyContacts(10));
    const failed = await stager.finish().catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(HttpError);
    expect((failed as HttpError).status).toBe(503);
  });
});
