import { EVENT_RETENTION_SECONDS } from '../../functions/webhooks/events.ts';
import type { ItemKind } from './model.ts';
import { CALLS_RETENTION_SECONDS } from '../../functions/calls/model.ts';
import { CAP_SLOT_TTL_MS } from '../../functions/calls/compliance/cap.ts';

/**
 * The items the capacity report prices apart (docs/capacity.md, "Issue 25: the attempt log, kept events
 * and key lookups, measured"), told by their partition key as the code writes it. Each kind's requests,
 * units and stored bytes are also in the totals: this only says how much of them is the kind's.
 * test/capacity/kinds.test.ts checks each pattern against the key the code makes.
 */
/** A spoken call's summary in the day, bytes: what a real agent's few sentences run to. Its links are the simulator's (about 90 bytes each). */
export const DAY_SUMMARY_BYTES = 600;

/** Each contact's data in the day: an externalId and three prompt variables (about 110 bytes as stored). */
export const dayContactData = (i: number) => ({
  externalId: `crm-${String(i).padStart(8, '0')}`,
  variables: { first_name: ['Ada', 'Grace', 'Alan', 'Barbara'][i % 4]!, last_name: 'Example', account: `A-${100000 + i}` },
});

export const pricedItemKinds: readonly (ItemKind & { retentionDays: number | null; description: string })[] = [
  {
    name: 'attemptRows',
    description: 'the attempt log: a PutItem per delivery attempt, a job’s and a wait-list send’s (functions/webhooks/attempts.ts), its keys-only byReceived entry when it delivered',
    // `TENANT#<tenantId>#ATTEMPTS#<hex>` (attemptsPartition); its byReceived entry is written by the same Put.
    pk: /^TENANT#[A-Za-z0-9_-]+#ATTEMPTS#[0-9a-f]+$/,
    retentionDays: EVENT_RETENTION_SECONDS / 86_400,
  },
  {
    name: 'keptEvents',
    description: 'events kept 30 days for recovery: a Put in the publishing transaction (functions/webhooks/kept-events.ts)',
    // `TENANT#<tenantId>#EVENTS#<yyyy-mm-ddThh>#<shard>` (keptPartition).
    pk: /^TENANT#[A-Za-z0-9_-]+#EVENTS#\d{4}-\d{2}-\d{2}T\d{2}#\d+$/,
    retentionDays: EVENT_RETENTION_SECONDS / 86_400,
  },
  {
    name: 'contactData',
    description: 'a contact’s data (externalId, variables) and its externalId entry: BatchWriteItem before the batch’s transaction, a BatchGetItem per dial group (functions/calls/store.ts)',
    // The contact's partition `TENANT#<tenantId>#BATCH#<hex>#C<nn>`, sort keys `DATA#<number>` and `XID#<externalId>`.
    pk: /^TENANT#[A-Za-z0-9_-]+#BATCH#[0-9a-f]{32}#C\d{2}$/,
    sk: /^(DATA|XID)#/,
    retentionDays: CALLS_RETENTION_SECONDS / 86_400,
  },
  {
    name: 'callAttempts',
    description: 'a call’s attempt item with its artefacts, a Put in the completion’s transaction (functions/calls/store.ts completionItems)',
    // The contact's partition, sort key `ATTEMPT#<number>#<round>`.
    pk: /^TENANT#[A-Za-z0-9_-]+#BATCH#[0-9a-f]{32}#C\d{2}$/,
    sk: /^ATTEMPT#/,
    retentionDays: CALLS_RETENTION_SECONDS / 86_400,
  },
  {
    name: 'apiKeys',
    description: 'the tenant API’s key check: a consistent GetItem of the key (cached per container), lastUsedAt at most once a minute (functions/calls/keys.ts)',
    // `TENANT#<tenantId>#KEYS` (apiKeysPartition): one item per key, not per result.
    pk: /^TENANT#[A-Za-z0-9_-]+#KEYS$/,
    retentionDays: null,
  },
  {
    name: 'deliveryEndpointReads',
    description: 'webhook.deliver’s reads of its endpoint’s row: a successor’s fresh read, and the drain’s GetItem before each send from the wait list (functions/webhooks/delivery.ts)',
    // `TENANT#<tenantId>#ENDPOINT#<hex>` (endpointPartition), read by the deliverer: its lease writes are the
    // delivery's own cost, priced in the totals, so only reads count here.
    pk: /^TENANT#[A-Za-z0-9_-]+#ENDPOINT#[0-9a-f]+$/,
    source: 'job:webhook.deliver',
    only: 'reads',
    retentionDays: null,
  },
  // Issue 27's compliance at the dial (functions/calls/compliance/): each on a line of its own.
  {
    name: 'suppressionCheck',
    description: 'the suppression ConditionCheck in every dial’s transaction: attribute_not_exists on the number’s entry (functions/calls/compliance/suppression-store.ts), billed as a transactional write of the entry as stored (none: 1 KB)',
    // `TENANT#<tenantId>#SUPP#<shard>` (suppressionPartition), sort key `NUMBER#<E.164>`: the check only.
    pk: /^TENANT#[A-Za-z0-9_-]+#SUPP#\d+$/,
    actions: ['check'],
    only: 'writes',
    retentionDays: null,
  },
  {
    name: 'suppressionList',
    description: 'the suppression list itself: entries written by PUT /v1/suppressions, an import or an opt-out in the intake’s transaction, their audit records, and reads of the list (GET /v1/suppressions); kept without TTL',
    // The entries' partitions (as above) and `TENANT#<tenantId>#SUPPAUDIT`; every action but the dial's check.
    pk: /^TENANT#[A-Za-z0-9_-]+#SUPP(#\d+|AUDIT)$/,
    actions: ['put', 'update', 'delete'],
    retentionDays: null,
  },
  {
    name: 'capQuery',
    description: 'the cap’s read before each dial: a Query of the number’s slot items (functions/calls/store.ts capSlots), eventually consistent',
    // `TENANT#<tenantId>#CAP#<E.164>` (capPartition), read only.
    pk: /^TENANT#[A-Za-z0-9_-]+#CAP#\+\d+$/,
    only: 'reads',
    retentionDays: null,
  },
  {
    name: 'capSlots',
    description: 'the cap slot a dial claims: a conditional Put in the dial’s transaction (functions/calls/compliance/cap.ts), kept 25 h by TTL',
    // The same partition, sort key `SLOT#<k>`: the writes and what stays stored.
    pk: /^TENANT#[A-Za-z0-9_-]+#CAP#\+\d+$/,
    sk: /^SLOT#/,
    only: 'writes',
    retentionDays: CAP_SLOT_TTL_MS / 86_400_000,
  },
  {
    name: 'deferrals',
    description: 'the deferred list beside the dial cursor: an entry and a position mark per contact a window or the cap defers, written in the dial’s transaction, and their reads (functions/calls/compliance/dial-items.ts)',
    // `<batch partition>#DEFER` (deferPartition), sort keys `Q#…` (entries) and `P#…` (marks).
    pk: /^TENANT#[A-Za-z0-9_-]+#BATCH#[0-9a-f]{32}#DEFER$/,
    retentionDays: CALLS_RETENTION_SECONDS / 86_400,
  },
];
