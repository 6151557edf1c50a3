import { batchIds } from './model.ts';
import type { CallsStore } from './store.ts';

/** What a completion needs to know about its batch, all immutable (a call's round is in its id). */
export interface BatchConfig {
  batchId: string;
  tenantId: string;
  minConversationDurationSeconds: number;
  /** The batch's `retryOn` (absent: every retryable code): what the intake's `retryable` answer reflects (control/batch-control.ts `retriedIn`). Set at creation, never changed. */
  retryOn?: readonly string[] | undefined;
}

/**
 * A per-container cache of batch settings, so an applied webhook costs one TransactWriteItems and no read.
 * A miss reads the batch once. Bounded: the oldest entry goes first.
 */
export class BatchConfigCache {
  private readonly store: CallsStore;
  private readonly max: number;
  private readonly entries = new Map<string, BatchConfig>();

  constructor(store: CallsStore, max = 5000) {
    this.store = store;
    this.max = max;
  }

  /** The batch's settings, or undefined when there is no such batch (or it is deleted: nothing will change it again). */
  async get(batchId: string): Promise<BatchConfig | undefined> {
    const hit = this.entries.get(batchId);
    if (hit) return hit;
    // Not an id redial issued (b_<tenantId>.<hex>): no batch of any tenant has it.
    if (!batchIds.parse(batchId)) return undefined;
    const row = await this.store.getBatch(batchId);
    if (!row || row.status === 'Deleted') return undefined;
    const config: BatchConfig = { batchId, tenantId: row.tenantId, minConversationDurationSeconds: row.minConversationDurationSeconds, ...(row.retryOn ? { retryOn: row.retryOn } : {}) };
    this.entries.set(batchId, config);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
    return config;
  }
}
