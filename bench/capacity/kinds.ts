import { EVENT_RETENTION_SECONDS } from '../../functions/webhooks/events.ts';
import type { ItemKind } from './model.ts';

/**
 * The items the capacity report prices apart (docs/capacity.md, "Issue 25: the attempt log, kept events
 * and key lookups, measured"), told by their partition key as the code writes it. Each kind's requests,
 * units and stored bytes are also in the totals: this only says how much of them is the kind's.
 * test/capacity/kinds.test.ts checks each pattern against the key the code makes.
 */
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
