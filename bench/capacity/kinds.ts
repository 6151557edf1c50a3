import { EVENT_RETENTION_SECONDS } from '../../functions/webhooks/events.ts';
import type { ItemKind } from './model.ts';
import { CALLS_RETENTION_SECONDS } from '../../functions/calls/model.ts';

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
];
