import { createHash } from 'node:crypto';
import type { TableDefinition } from '../platform/tables.ts';
import type { RoundRetry } from './backoff.ts';
import type { CallingWindow } from './window.ts';

/**
 * The calls context's records and their keys. One table, `calls`, single-table (pk/sk):
 *
 * | item | pk | sk |
 * |---|---|---|
 * | tenant | `TENANT#<tenantId>` | `TENANT` |
 * | batch | `BATCH#<batchId>` | `BATCH` |
 * | a round's dial list, one page | `BATCH#<batchId>` | `LIST#<round:3>#<page:5>` |
 * | contact state | `BATCH#<batchId>` | `CONTACT#<E.164 number>` |
 *
 * A contact's key is derived from what the call-result webhook carries (batch and number), so the intake
 * writes without reading. The order to dial in lives in the immutable list pages: round 1's are written
 * with the batch; the finaliser writes the next round's as it promotes contacts. A contact has no state
 * item until it is first dialled: until then it is Queued.
 */
export const callsTable = {
  name: 'calls',
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [],
  ttlAttribute: 'expiresAt',
} as const satisfies TableDefinition;

/** A contact's status (docs/calls.md, "States"): only a Calling contact accepts a result. */
export const ContactStatus = {
  Queued: 'Queued',
  Calling: 'Calling',
  Completed: 'Completed',
  RetryEligible: 'RetryEligible',
} as const;
export type ContactStatus = (typeof ContactStatus)[keyof typeof ContactStatus];

/** A batch's status. */
export const BatchStatus = {
  /** Created; nothing dialled yet (waiting for its window, or for its first dial run). */
  Pending: 'Pending',
  InProgress: 'InProgress',
  Finalised: 'Finalised',
  Deleted: 'Deleted',
} as const;
export type BatchStatus = (typeof BatchStatus)[keyof typeof BatchStatus];

/** Where a completion came from; every source goes through the same transaction. */
export type CompletionSource = 'webhook' | 'watchdog' | 'placer';

export interface TenantRow {
  pk: string;
  sk: 'TENANT';
  tenantId: string;
  concurrencyLimit: number;
  /** Calls in progress across every batch of the tenant: the conditional counter the dialer takes a slot from. */
  active: number;
  ownerEmail?: string;
  createdAt: string;
  updatedAt: string;
}

export interface BatchRow {
  pk: string;
  sk: 'BATCH';
  batchId: string;
  tenantId: string;
  status: BatchStatus;
  /** The round in progress (1-based); rounds used so far once it is finalised. */
  round: number;
  maxAttempts: number;
  callingWindow?: CallingWindow;
  retry: RoundRetry;
  minConversationDurationSeconds: number;
  contactCount: number;
  createdAt: string;
  updatedAt: string;
  finalisedAt?: string;
  deletedAt?: string;
  /** The client's `Idempotency-Key`, when it sent one (the batch id was derived from it). */
  idempotencyKey?: string;
  /** With a key: the sha256 of the validated request body, which a retry with the same key must match. */
  requestHash?: string;
  // The current round's dial list and the dialer's cursor in it.
  listPages: number;
  roundSize: number;
  dialPage: number;
  dialPos: number;
  /** Every contact of the round's list has been dialled (or skipped). */
  dialComplete: boolean;
  // Contacts per status (nCalling is also the number of calls in progress).
  nQueued: number;
  nCalling: number;
  nCompleted: number;
  nRetryEligible: number;
  /** Completed contacts by normalised code (a RetryEligible contact leaves its code's count until it completes again). */
  byCode: Record<string, number>;
  // The finaliser's cursor over the round's list, and the next round's list it has written so far.
  finPage: number;
  finPos: number;
  nextPages: number;
  nextSize: number;
}

export interface ContactRow {
  pk: string;
  sk: string;
  batchId: string;
  contactNumber: string;
  status: ContactStatus;
  /** The round of its latest dial. */
  round: number;
  /** Dials so far. */
  attempts: number;
  watchdogJobId?: string;
  dialledAt?: string;
  completedAt?: string;
  /** The normalised code of its latest completed call. */
  code?: string;
  retryable?: boolean;
  source?: CompletionSource;
  reportedCode?: string;
  durationSeconds?: number;
  emptyTranscription?: boolean;
  /**
   * The call of its latest dial ({@link callIdFor}): written with the Calling state, sent to the placer,
   * and required back on the result. Only a result or a watchdog naming it may complete the contact.
   * (Absent on a contact dialled before calls had ids.)
   */
  callId?: string;
  updatedAt: string;
}

export interface ListPage {
  pk: string;
  sk: string;
  round: number;
  page: number;
  numbers: string[];
}

export const tenantKey = (tenantId: string) => ({ pk: `TENANT#${tenantId}`, sk: 'TENANT' as const });
export const batchKey = (batchId: string) => ({ pk: `BATCH#${batchId}`, sk: 'BATCH' as const });
export const contactKey = (batchId: string, number: string) => ({ pk: `BATCH#${batchId}`, sk: `CONTACT#${number}` });
export const listKey = (batchId: string, round: number, page: number) => ({
  pk: `BATCH#${batchId}`,
  sk: `LIST#${String(round).padStart(3, '0')}#${String(page).padStart(5, '0')}`,
});
/** Numbers per page of a round's dial list (20 pages for the largest batch: one transaction creates it). */
export const LIST_PAGE_SIZE = 500;
export const listPrefix = (round: number) => `LIST#${String(round).padStart(3, '0')}#`;
export const CONTACT_PREFIX = 'CONTACT#';

/** Status → the batch row's counter attribute. */
export const countAttribute = (status: ContactStatus): `n${ContactStatus}` => `n${status}`;

/**
 * The id of the call placed for a contact in a round: derived from the three, so a re-run of the same
 * dial names the same call, and every round's call has its own. Opaque to the placer and the AI call
 * handler, which echo it back with the result (`call_` and 22 base64url characters of a SHA-256).
 */
export const callIdFor = (batchId: string, contactNumber: string, round: number): string =>
  `call_${createHash('sha256').update(`${batchId}\n${contactNumber}\n${round}`).digest('base64url').slice(0, 22)}`;

/** Job ids, deterministic so each is created once: one dialer per round, one watchdog per dial, one finaliser per round. */
export const jobIds = {
  dial: (batchId: string, round: number) => `calls.dial:${batchId}:${round}`,
  // Job ids allow no '+': the E.164 number goes in without it.
  watchdog: (batchId: string, number: string, round: number) => `calls.watchdog:${batchId}:${number.replace(/^\+/, '')}:${round}`,
  finalise: (batchId: string, round: number) => `calls.finalise:${batchId}:${round}`,
};
