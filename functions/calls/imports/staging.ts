import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { unavailable } from '../../platform/http.ts';
import type { Contact } from '../contacts/contact.ts';
import { batchPartition } from '../model.ts';
import type { CallsStore } from '../store.ts';

/**
 * An import's contacts, staged between the import request (which read and validated the whole file) and
 * the import job (which turns them into list pages and data items, page by page): the normalised contacts
 * in upload order, cut into chunks by bytes, each chunk one item.
 *
 *   chunk k  ─▶  pk `TENANT#<tenantId>#BATCH#<hex>#I<k mod 16>`, sk `IMPORT#<k:5>`
 *                { first: index of its first contact, count, contacts: deflated JSON array, expiresAt }
 *
 * A chunk takes contacts until their JSON passes {@link RAW_CHUNK_BYTES}, and is stored deflated; one whose
 * deflated bytes would pass {@link MAX_CHUNK_BYTES} is cut in two until each half fits, so every item
 * stays well under DynamoDB's 400 KB whatever its contacts carry (up to 4 KB of variables each). Chunks
 * spread over {@link STAGE_SHARDS} partitions, as contacts do, so writing 50 MB of them does not load one.
 * They are derived from the file and the batch id alone: a retried request writes the same items. They
 * expire after {@link STAGE_RETENTION_SECONDS} (an import that never became a batch leaves nothing for
 * long).
 */

/** Uncompressed JSON a chunk takes before it is sealed. */
export const RAW_CHUNK_BYTES = 1024 * 1024;
/** The most a chunk's deflated contacts may weigh (an item's other attributes and keys are a few dozen bytes). */
export const MAX_CHUNK_BYTES = 300 * 1024;
export const STAGE_SHARDS = 16;
export const STAGE_PREFIX = 'IMPORT#';
/** How long staged chunks stay: an import runs in minutes; a day covers a job waiting out throttling. */
export const STAGE_RETENTION_SECONDS = 2 * 86400;

export const stageKey = (batchId: string, chunk: number) => ({
  pk: `${batchPartition(batchId)}#I${String(chunk % STAGE_SHARDS).padStart(2, '0')}`,
  sk: `${STAGE_PREFIX}${String(chunk).padStart(5, '0')}`,
});

export interface StagedChunk {
  pk: string;
  sk: string;
  first: number;
  count: number;
  contacts: Uint8Array;
  expiresAt: number;
}

/** A contact as staged: what the batch keeps of it (contacts/contact.ts `Contact`), its CSV row number left out. */
const staged = (c: Contact): Contact => {
  const { number, numberValid, region, externalId, variables, timezone } = c;
  return { number, numberValid, ...(region ? { region } : {}), ...(externalId !== undefined ? { externalId } : {}), ...(variables ? { variables } : {}), ...(timezone !== undefined ? { timezone } : {}) };
};

/**
 * Writes an import's contacts as chunks while they are read: `add` a page at a time, then `finish`, which
 * gives each chunk's first contact index (what the import job finds a page's chunks by). Sealed chunks
 * are written 25 at a time (one BatchWriteItem each), sent once: one DynamoDB leaves unprocessed fails the
 * request (503; a retry with the same Idempotency-Key writes the same items).
 */
export class Stager {
  private readonly store: CallsStore;
  private readonly batchId: string;
  private readonly expiresAt: number;
  private buffer: string[] = [];
  private bufferBytes = 0;
  private readonly sealed: StagedChunk[] = [];
  private readonly starts: number[] = [];
  private next = 0;
  /** Requests sent and bytes staged so far (the bench reports them). */
  requests = 0;
  bytes = 0;

  constructor(store: CallsStore, batchId: string, now: number) {
    this.store = store;
    this.batchId = batchId;
    this.expiresAt = Math.floor(now / 1000) + STAGE_RETENTION_SECONDS;
  }

  async add(contacts: readonly Contact[]): Promise<void> {
    for (const contact of contacts) {
      const json = JSON.stringify(staged(contact));
      this.buffer.push(json);
      this.bufferBytes += json.length + 1;
      if (this.bufferBytes >= RAW_CHUNK_BYTES) this.seal();
    }
    if (this.sealed.length >= 25) await this.write();
  }

  /** Seals and writes what is left; the first contact index of every chunk, in order. */
  async finish(): Promise<number[]> {
    this.seal();
    await this.write();
    return this.starts;
  }

  private seal(): void {
    if (this.buffer.length === 0) return;
    const lines = this.buffer;
    this.buffer = [];
    this.bufferBytes = 0;
    this.sealLines(lines);
  }

  private sealLines(lines: string[]): void {
    const packed = deflateRawSync(Buffer.from(`[${lines.join(',')}]`, 'utf8'));
    if (packed.length > MAX_CHUNK_BYTES && lines.length > 1) {
      const half = Math.ceil(lines.length / 2);
      this.sealLines(lines.slice(0, half));
      this.sealLines(lines.slice(half));
      return;
    }
    if (packed.length > MAX_CHUNK_BYTES) throw new RangeError('one staged contact passes the chunk limit');
    const chunk = this.starts.length;
    this.starts.push(this.next);
    this.sealed.push({ ...stageKey(this.batchId, chunk), first: this.next, count: lines.length, contacts: packed, expiresAt: this.expiresAt });
    this.next += lines.length;
    this.bytes += packed.length;
  }

  private async write(): Promise<void> {
    while (this.sealed.length > 0) {
      const items = this.sealed.splice(0, 25);
      const written = await this.store.putItems(items as unknown as Record<string, unknown>[]);
      this.requests += written.requests;
      if (written.unprocessed > 0) throw unavailable(`DynamoDB left ${written.unprocessed} of the import’s staged chunks unwritten; no batch was created, try again (with an Idempotency-Key, the same batch)`);
    }
  }
}

/** The staged contacts of chunk `chunk`, in order (undefined when the chunk is gone: expired, or never written). */
export async function readChunk(store: CallsStore, batchId: string, chunk: number): Promise<{ first: number; contacts: Contact[] } | undefined> {
  const key = stageKey(batchId, chunk);
  const [item] = await store.queryBatch<StagedChunk>(batchId, key.sk, key.pk);
  if (!item || item.sk !== key.sk) return undefined;
  return { first: item.first, contacts: JSON.parse(inflateRawSync(item.contacts).toString('utf8')) as Contact[] };
}

/** The chunk holding contact `index`, given every chunk's first index (ascending). */
export function chunkOf(starts: readonly number[], index: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= index) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
