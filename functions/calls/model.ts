import type { AppointmentsSettings } from '../platform/appointments.ts';
import { createHash } from 'node:crypto';
import type { TableDefinition } from '../platform/tables.ts';
import { ownedIds, tenantKeyPrefix } from '../platform/tenancy.ts';
import type { RoundRetry } from './backoff.ts';
import type { CallingWindow } from './window.ts';
import type { ControlStatus, PausableStatus } from './control/batch-control.ts';

/**
 * The calls context's records and their keys. One table, `calls`, single-table (pk/sk). Every item a
 * tenant owns has a partition key that begins with `TENANT#<tenantId>` (functions/platform/tenancy.ts); a
 * batch id names its tenant (`b_<tenantId>.<hex>`), and `<hex>` below is its own part:
 *
 * | item | pk | sk |
 * |---|---|---|
 * | tenant | `TENANT#<tenantId>` | `TENANT` |
 * | a slot shard of its concurrency limit | `TENANT#<tenantId>#S<k>` | `SLOTS` |
 * | an API key (its hash) | `TENANT#<tenantId>#KEYS` | `KEY#<keyId>` |
 * | the tenant's batches, one entry per batch | `TENANT#<tenantId>#BATCHES` | `<createdAt>#<batchId>` |
 * | batch | `TENANT#<tenantId>#BATCH#<hex>` | `BATCH` |
 * | a round's dial list, one page | `TENANT#<tenantId>#BATCH#<hex>` | `LIST#<round:3>#<page:5>` |
 * | contact state | `TENANT#<tenantId>#BATCH#<hex>#C<shard:2>` (16 shards by number) | `CONTACT#<E.164 number>` |
 * | a contact's data (externalId, variables, zone), when it has any | the contact's shard | `DATA#<E.164 number>` |
 * | one call of a contact (an attempt), its artefacts | the contact's shard | `ATTEMPT#<E.164 number>#<round:3>` |
 * | an externalId → its contact's number | `…#C<shard:2>` (16 shards by externalId) | `XID#<externalId>` |
 * | a finished round's outcomes | `TENANT#<tenantId>#BATCH#<hex>` | `ROUND#<round:3>` |
 * | the operators' batch index, every tenant's | `BATCHES` | `<createdAt>#<batchId>` |
 *
 * A contact's key is derived from what the call-result webhook carries (batch and number; the batch id
 * names the tenant), so the intake writes without reading. The order to dial in lives in the immutable list pages: round 1's are written
 * with the batch; the finaliser writes the next round's (the contacts it promotes). A contact's item is
 * written once per round, when its call completes (the dial writes none): a contact is Calling because the
 * batch's dial cursor passed its list position in the round, and RetryEligible because its item holds a
 * retryable code of the round before (status.ts derives both).
 */
export const callsTable = {
  name: 'calls',
  partitionKey: 'pk',
  sortKey: 'sk',
  indexes: [],
  ttlAttribute: 'expiresAt',
} as const satisfies TableDefinition;

/**
 * Rows of a batch (the batch, its list pages, its contacts) are deleted by DynamoDB's TTL this long after
 * their last dial, promotion or finalising: a batch's report stays readable for 90 days after it ends.
 * Tenants and their slot shards have none.
 */
export const CALLS_RETENTION_SECONDS = 90 * 86400;
export const callsExpiry = (now: number): number => Math.floor(now / 1000) + CALLS_RETENTION_SECONDS;

/**
 * A contact's status (docs/calls.md, "States"), as the API shows it. Only Completed is stored (on the
 * contact's item); Queued, Calling and RetryEligible are derived from the item, the batch's round and its
 * cursors (status.ts).
 */
export const ContactStatus = {
  Queued: 'Queued',
  Calling: 'Calling',
  Completed: 'Completed',
  RetryEligible: 'RetryEligible',
  /** Its number is on its tenant's suppression list: never dialled again in the batch, no attempt spent (code SUPPRESSED). */
  Suppressed: 'Suppressed',
} as const;
export type ContactStatus = (typeof ContactStatus)[keyof typeof ContactStatus];

/** A batch's status. */
export const BatchStatus = {
  /** Created from a large CSV: its import job is writing its contacts; nothing is dialled until it ends (then Pending). */
  Importing: 'Importing',
  /** Waiting for its `startAt` (its start job moves it to Pending then): control/batch-control.ts. */
  Scheduled: 'Scheduled',
  /** Created; nothing dialled yet (waiting for its window, or for its first dial run). */
  Pending: 'Pending',
  InProgress: 'InProgress',
  /** `POST …/pause`: no dial commits; calls in flight finish and their results apply. `pausedFrom` says where resume returns it. */
  Paused: 'Paused',
  Finalised: 'Finalised',
  /** Paused for longer than 30 days (`batch.cancelled`). Terminal. */
  Cancelled: 'Cancelled',
  Deleted: 'Deleted',
} as const satisfies Record<ControlStatus, ControlStatus>;
export type BatchStatus = (typeof BatchStatus)[keyof typeof BatchStatus];

/** Where a completion came from; every source goes through the same transaction. */
export type CompletionSource = 'webhook' | 'watchdog' | 'placer';

export interface TenantRow {
  pk: string;
  sk: 'TENANT';
  tenantId: string;
  concurrencyLimit: number;
  /** The per-number frequency cap (compliance/cap.ts); absent on rows written before it: the default. */
  maxCallsPerNumberPer24h?: number;
  /**
   * Calls in progress across every batch of the tenant. Stored on the row: only calls dialled before the
   * limit was split over slot shards; `getTenant` adds the shards' (model.ts `SlotRow`).
   */
  active: number;
  /** How many slot shards its limit is split over ({@link slotShardsFor}). */
  slotShards?: number;
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
  /** When DynamoDB's TTL deletes the row, in epoch seconds ({@link callsExpiry}). */
  expiresAt?: number;
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
  /**
   * The watchdog job of the dial run that may still dial under it: set by a run's first dial, required by
   * its later dials, and removed by that watchdog when it runs (dialer.ts, watchdog.ts). A watchdog that is
   * not (or no longer) named here will never have a call placed under it again.
   */
  openWatchdog?: string;
  /** Watchdogs opened in the round so far: the next one opened is number `watchdogs + 1` ({@link jobIds}). */
  watchdogs?: number;
  /** When the round's latest dial group was dialled (ISO): what a watchdog counts its run's call timeout from. */
  lastDialAt?: string;
  // Contacts per status (nCalling is also the number of calls in progress).
  nQueued: number;
  nCalling: number;
  /** The calls in progress by the tenant's slot shard they hold (`s0`…`s7`, absent when none ever did): what deleting the batch gives back, shard by shard. */
  [slot: `s${number}`]: number | undefined;
  nCompleted: number;
  nRetryEligible: number;
  /** Contacts ended `Suppressed` (absent: none). */
  nSuppressed?: number;
  /**
   * Contacts of the round deferred and not dialled yet (the deferred list's entries, compliance/dial-items.ts):
   * the round is fully dialled (`dialComplete`) only with the cursor at the list's end and this at 0.
   */
  nDeferred?: number;
  /** List positions deferred so far, every round (never goes down): a watchdog reads position marks only when some were. */
  deferrals?: number;
  /** Completed contacts by normalised code (a RetryEligible contact leaves its code's count until it completes again). */
  byCode: Record<string, number>;
  // The finaliser's cursor over the round's list, and the next round's list it has written so far.
  finPage: number;
  finPos: number;
  nextPages: number;
  nextSize: number;
  /** Every variable name the batch's contacts use, in import order: the export's variable columns. Absent: none. */
  variableNames?: string[];
  /** Some contact has a data item (externalId, variables or zone, or a number flagged not valid): the dialer reads them per dial group. */
  hasContactData?: boolean;
  /** Contacts whose number is possible but not valid (accepted, flagged on the contact). */
  invalidNumbers?: number;
  /** Contacts dropped as duplicates (`dedupe`). */
  duplicatesDropped?: number;
  /** The contact settings the batch was created with (`defaultCountry`, `strictNumbers`). */
  defaultCountry?: string;
  strictNumbers?: boolean;
  // Campaign control (control/batch-control.ts, docs/calls.md "Batch control").
  /** When it starts (ISO), if it was given one: Scheduled until then. */
  startAt?: string;
  /** Start jobs made so far (creation and each reschedule): the newest is number `starts` ({@link jobIds}). */
  starts?: number;
  /** Set while Paused: the status resume returns it to. */
  pausedFrom?: PausableStatus;
  /** Set while Paused: when the pause committed (ISO); its expiry job cancels only this pause. */
  pausedAt?: string;
  /** Pauses so far: the pause expiry job of the n-th is number n ({@link jobIds}). */
  pauses?: number;
  /** Dial jobs made to wake the round after a resume or a new calling window (`calls.dial:<batch>:<round>:wake<n>`). */
  dialWakes?: number;
  /** Its calls in progress at most (1 to the tenant's limit; absent: the tenant's limit). */
  maxConcurrentCalls?: number;
  /** The retryable codes that earn another round (absent: every retryable code): `retriedIn`. */
  retryOn?: string[];
  /** The batch this one re-runs the contacts of (`POST /v1/batches/{id}/rerun`). */
  parentBatchId?: string;
  /** The calendar its agent books appointments into, and how (`appointments` of its body; functions/platform/appointments.ts). */
  appointments?: AppointmentsSettings;
  /** When it was cancelled (ISO): paused 30 days. */
  cancelledAt?: string;
}

/**
 * A contact's item: its latest completed call, written once per round by that call's completion (never by
 * a dial). No item: never completed.
 */
export interface ContactRow {
  pk: string;
  sk: string;
  batchId: string;
  /** When DynamoDB's TTL deletes it, in epoch seconds (set at each completion). */
  expiresAt?: number;
  contactNumber: string;
  /** Always Completed as stored; what the API shows is derived (status.ts). */
  status: ContactStatus;
  /** The round of its latest completed call. */
  round: number;
  /** Rounds it was dialled in, as of its latest completion (= `round`: a contact is dialled once a round). */
  attempts: number;
  completedAt?: string;
  /** The normalised code of its latest completed call. */
  code?: string;
  retryable?: boolean;
  source?: CompletionSource;
  reportedCode?: string;
  durationSeconds?: number;
  emptyTranscription?: boolean;
  /** The call that completed ({@link callIdFor}, with its slot suffix): it names the round and the list position. */
  callId?: string;
  updatedAt: string;
  // The latest call's artefacts (its attempt item has them all, `data` included).
  recordingUrl?: string;
  transcriptUrl?: string;
  summary?: string;
  endedReason?: string;
}

/**
 * A contact's data, apart from its state: what the customer gave with it. Written before the contact can be
 * dialled (with the batch, or by the import job before the list page naming it), never changed after;
 * read by the dialer per dial group (one BatchGet) and by the listing and the export. A contact with no
 * externalId, no variables, no zone and a valid number has none.
 */
export interface ContactDataRow {
  pk: string;
  sk: string;
  batchId: string;
  contactNumber: string;
  externalId?: string;
  variables?: Record<string, string | number | boolean>;
  timezone?: string;
  /** False for a possible number in no assigned range (accepted unless `strictNumbers`). Absent: valid. */
  numberValid?: false;
  /** ISO 3166-1 alpha-2, when the number names one region. */
  region?: string;
  expiresAt?: number;
}

/** An externalId's entry: which contact of the batch it names (the listing's `externalId` filter reads it). */
export interface ExternalIdRow {
  pk: string;
  sk: string;
  contactNumber: string;
  /** The contact's position in upload order (round 1's list): what tells whether round 1 has dialled it. */
  position: number;
  expiresAt?: number;
}

/**
 * One call of a contact — one per round it was dialled in, written by the call's completion in its
 * transaction (so at most one per round: the contact's condition admits one completion a round).
 */
export interface AttemptRow {
  pk: string;
  sk: string;
  batchId: string;
  contactNumber: string;
  round: number;
  callId: string;
  /** The handler's own code, as reported (absent for a TIMEOUT or a placer's INTERNAL_ERROR). */
  reportedCode?: string;
  code: string;
  retryable: boolean;
  source: CompletionSource;
  durationSeconds?: number;
  emptyTranscription?: boolean;
  /** When the call's dial committed, as the placer was told and echoed back (absent when it did not echo). */
  placedAt?: string;
  completedAt: string;
  recordingUrl?: string;
  transcriptUrl?: string;
  summary?: string;
  data?: Record<string, unknown>;
  endedReason?: string;
  expiresAt?: number;
}

export interface ListPage {
  pk: string;
  sk: string;
  round: number;
  page: number;
  numbers: string[];
  /** When DynamoDB's TTL deletes it, in epoch seconds. */
  expiresAt?: number;
}

export const tenantKey = (tenantId: string) => ({ pk: `TENANT#${tenantId}`, sk: 'TENANT' as const });

/**
 * Batch ids name their tenant: `b_<tenantId>.<32 hex>` (functions/platform/tenancy.ts `ownedIds`), so a
 * worker or the intake, given a batch id, builds the batch's keys without a read, and a tenant route builds
 * them from its scope (`inScope`): another tenant's batch id names nothing there.
 */
export const batchIds = ownedIds('b', 'a batch');

/** The partition of a batch's row, list pages and rounds: `TENANT#<tenantId>#BATCH#<hex>`. */
export function batchPartition(batchId: string): string {
  const id = batchIds.parse(batchId);
  if (!id) throw new RangeError(`not a batch id: ${batchId}`);
  return `${tenantKeyPrefix(id.tenantId)}BATCH#${id.hex}`;
}

/** The batch id of a key of the calls table (a batch's own partition or one of its contact shards), if it is one. */
export function batchIdOfPartition(pk: string): string | undefined {
  const match = /^TENANT#([^#]+)#BATCH#([0-9a-f]{32})(?:#C\d{2})?$/.exec(pk);
  return match ? batchIds.make(match[1]!, match[2]!) : undefined;
}

/**
 * A tenant's concurrency limit, split over slot shards so its dials and results spread over several
 * partitions (docs/capacity.md): shard k allows {@link slotLimit} calls at once, the shards' limits add up
 * to the tenant's, and each dial takes a slot from one shard with a conditional counter, so the tenant's
 * calls in progress never exceed its limit. A tenant uses {@link slotShardsFor} its limit: one shard below
 * 64 (a small limit split eight ways would strand slots), up to {@link SLOT_SHARDS}.
 */
export const SLOT_SHARDS = 8;
export const slotShardsFor = (limit: number): number => Math.min(SLOT_SHARDS, Math.max(1, Math.floor(limit / 32)));
export const slotLimit = (limit: number, shards: number, shard: number): number => (shard >= shards ? 0 : Math.floor(limit / shards) + (shard < limit % shards ? 1 : 0));
export const slotKey = (tenantId: string, shard: number) => ({ pk: `TENANT#${tenantId}#S${shard}`, sk: 'SLOTS' as const });
/** The batch row's count of its calls holding a slot of shard k. */
export const slotCount = (shard: number): `s${number}` => `s${shard}`;

/** One slot shard of a tenant. */
export interface SlotRow {
  pk: string;
  sk: 'SLOTS';
  tenantId: string;
  shard: number;
  /** Calls in progress holding a slot of this shard. */
  active: number;
  /** This shard's part of the tenant's limit. */
  limit: number;
}

/**
 * The call id the placer is given names the slot shard the call holds (`.s<k>`, k > 0), so a result
 * releases that slot without a read; a call without the suffix holds shard 0.
 */
export const callWithSlot = (callId: string, shard: number): string => (shard > 0 ? `${callId}.s${shard}` : callId);
export const slotOfCall = (callId: string): number => Number(/\.s(\d)$/.exec(callId)?.[1] ?? 0);
/** The call id without its slot suffix: {@link callIdFor} of the contact, round and list position. */
export const baseCallId = (callId: string): string => callId.replace(/\.s\d$/, '');
export const batchKey = (batchId: string) => ({ pk: batchPartition(batchId), sk: 'BATCH' as const });
/**
 * A batch's contacts spread over {@link CONTACT_SHARDS} partitions of their own (a hash of the number picks
 * one), apart from the batch row: a large batch's dials and results write its contacts at hundreds a
 * second, which in the batch row's partition would pass DynamoDB's per-partition rate (docs/capacity.md).
 * The key is still derived from batch and number, so the intake writes without reading.
 */
export const CONTACT_SHARDS = 16;
export const contactShard = (number: string): number => createHash('sha256').update(number).digest().readUInt32BE(0) % CONTACT_SHARDS;
export const contactPartition = (batchId: string, shard: number): string => `${batchPartition(batchId)}#C${String(shard).padStart(2, '0')}`;
export const contactKey = (batchId: string, number: string) => ({ pk: contactPartition(batchId, contactShard(number)), sk: `CONTACT#${number}` });
export const DATA_PREFIX = 'DATA#';
export const contactDataKey = (batchId: string, number: string) => ({ pk: contactPartition(batchId, contactShard(number)), sk: `${DATA_PREFIX}${number}` });
/** An externalId's entry spreads over the same shards as contacts, by a hash of the id. */
export const externalIdKey = (batchId: string, externalId: string) => ({ pk: contactPartition(batchId, contactShard(`xid:${externalId}`)), sk: `XID#${externalId}` });
export const attemptPrefix = (number: string) => `ATTEMPT#${number}#`;
export const attemptKey = (batchId: string, number: string, round: number) => ({ pk: contactPartition(batchId, contactShard(number)), sk: `${attemptPrefix(number)}${String(round).padStart(3, '0')}` });
export const listKey = (batchId: string, round: number, page: number) => ({
  pk: batchPartition(batchId),
  sk: `LIST#${String(round).padStart(3, '0')}#${String(page).padStart(5, '0')}`,
});
/**
 * The entries a batch leaves when it is created (in the same transaction): one in its tenant's batch
 * index, which `GET /v1/batches` reads newest first with a Query of the tenant's own partition, and one in
 * the operators' index of every tenant's batches (`GET /v1/ops/batches`, the panel). Each is written once
 * per batch and never updated, so each partition takes only the batch creation rate (its tenant's, or all).
 */
export const tenantBatchesPartition = (tenantId: string): string => `${tenantKeyPrefix(tenantId)}BATCHES`;
export const tenantBatchIndexKey = (tenantId: string, createdAt: string, batchId: string) => ({ pk: tenantBatchesPartition(tenantId), sk: `${createdAt}#${batchId}` });
export const BATCH_INDEX_PK = 'BATCHES';
export const batchIndexKey = (createdAt: string, batchId: string) => ({ pk: BATCH_INDEX_PK, sk: `${createdAt}#${batchId}` });

/**
 * A round's outcomes (`ROUND#<round>`), written by its finaliser, never by the intake: `retried:<code>`
 * counts the contacts it promoted, by the code that made them retryable (one ADD per promotion step, in
 * the step's transaction), and `byCodeAfter` is the batch's byCode once the round was closed (set when it
 * re-arms or finalises the batch). Round r's terminal outcomes are its byCodeAfter less round r−1's.
 */
export interface RoundRow {
  pk: string;
  sk: string;
  round: number;
  byCodeAfter?: Record<string, number>;
  closedAt?: string;
  [retried: `retried:${string}`]: number;
}
export const roundKey = (batchId: string, round: number) => ({ pk: batchPartition(batchId), sk: `ROUND#${String(round).padStart(3, '0')}` });
export const ROUND_PREFIX = 'ROUND#';
export const RETRIED_PREFIX = 'retried:';

/** Numbers per page of a round's dial list (20 pages for the largest batch: one transaction creates it). */
export const LIST_PAGE_SIZE = 500;
export const listPrefix = (round: number) => `LIST#${String(round).padStart(3, '0')}#`;
export const CONTACT_PREFIX = 'CONTACT#';

/** Status → the batch row's counter attribute. */
export const countAttribute = (status: ContactStatus): `n${ContactStatus}` => `n${status}`;

/** Where a call was dialled: its round and its position in that round's list (page, position in the page). */
export interface CallPosition {
  round: number;
  page: number;
  pos: number;
}

const callHash = (batchId: string, contactNumber: string, at: CallPosition): string =>
  createHash('sha256').update(`${batchId}\n${contactNumber}\n${at.round}\n${at.page}\n${at.pos}`).digest('base64url').slice(0, 22);

/**
 * The id of the call placed for a contact at a list position of a round:
 * `call_<hash>.r<round>.p<page>.<pos>`, the hash a SHA-256 of batch, number, round, page and position (22
 * base64url characters). Derived, so a re-run of the same dial names the same call, and every round's call
 * has its own; readable, so the intake learns from the id alone which round and position the call was
 * dialled at, and checks it without a read ({@link parseCallId}). The placer and the AI call handler echo
 * it back with the result, with the slot suffix {@link callWithSlot} adds.
 */
export const callIdFor = (batchId: string, contactNumber: string, at: CallPosition): string => `call_${callHash(batchId, contactNumber, at)}.r${at.round}.p${at.page}.${at.pos}`;

/** A call id as the dialer made it: `call_<22 base64url>.r<round>.p<page>.<pos>`, and `.s<k>` for a slot shard k > 0. */
const CALL_ID = /^call_([A-Za-z0-9_-]{22})\.r([1-9]\d{0,2})\.p(0|[1-9]\d{0,4})\.(0|[1-9]\d{0,4})(?:\.s([1-7]))?$/;

/**
 * What a result's call id says, if it is one the dialer made **for this contact of this batch**: its round,
 * list position and slot shard. The hash is computed again from the body's batch and number and the
 * claimed round and position, so an id of another contact, another batch or an altered position is
 * refused (undefined), never applied. Whether that position was dialled in that round is the batch row's
 * condition at completion (store.ts).
 */
export function parseCallId(batchId: string, contactNumber: string, callId: string): (CallPosition & { shard: number }) | undefined {
  const match = CALL_ID.exec(callId);
  if (!match) return undefined;
  const at: CallPosition = { round: Number(match[2]), page: Number(match[3]), pos: Number(match[4]) };
  if (at.pos >= LIST_PAGE_SIZE || match[1] !== callHash(batchId, contactNumber, at)) return undefined;
  return { ...at, shard: Number(match[5] ?? 0) };
}

/** A dial cursor (page, position in the page): the next list position to dial. */
export interface DialCursor {
  dialPage: number;
  dialPos: number;
}

/** Whether the dial cursor has passed list position (page, pos) of its round: that position was dialled. */
export const isDialled = (cursor: DialCursor, page: number, pos: number): boolean => cursor.dialPage > page || (cursor.dialPage === page && cursor.dialPos > pos);

/**
 * Job ids, deterministic so each is created once: one dialer per round, one watchdog per dial run (the
 * round's n-th watchdog opened, counted on the batch row, so a watchdog can name the one opened after it:
 * watchdog.ts), one finaliser per round.
 */
export const jobIds = {
  dial: (batchId: string, round: number) => `calls.dial:${batchId}:${round}`,
  watchdog: (batchId: string, round: number, seq: number) => `calls.watchdog:${batchId}:${round}:w${seq}`,
  finalise: (batchId: string, round: number) => `calls.finalise:${batchId}:${round}`,
  /** A group dialled from the deferred list: named by its first call's list position (dialled once a round). */
  deferredWatchdog: (batchId: string, round: number, page: number, pos: number) => `calls.watchdog:${batchId}:${round}:d${page}.${pos}`,
  /** A dial job that wakes the round's dialing after a resume (or a new calling window): the batch's n-th. */
  dialWake: (batchId: string, round: number, n: number) => `calls.dial:${batchId}:${round}:wake${n}`,
  /** The batch's n-th start job (one at creation with a `startAt`, one per reschedule). */
  start: (batchId: string, n: number) => `calls.start:${batchId}:${n}`,
  /** The expiry of the batch's n-th pause. */
  pauseExpiry: (batchId: string, n: number) => `calls.pause_expiry:${batchId}:${n}`,
};
