import type { QueueName } from '../functions/app/system.ts';
import type { TableKey } from '../functions/app/system.ts';

/**
 * What each deployed function may touch, read off the code it runs. The stack grants exactly this and
 * nothing more; test/infra/access.test.ts holds the synthesized roles to its own copy of the list, so a
 * grant added here (or anywhere else) fails a test until someone shows the code needs it. docs/operations.md
 * ("What each function may do") is the same table in prose.
 *
 * How the entries were derived: every DynamoDB request the stores send (`functions/<context>/store.ts`,
 * `functions/jobs/store.ts`, `functions/webhooks/events.ts`), followed from the routes and handlers each
 * function serves to the store methods they call. A transaction needs the action of each item it holds
 * (Put → PutItem, Update → UpdateItem, ConditionCheck → ConditionCheckItem); a Query of an index needs
 * Query on that index's ARN. Sends follow `JobClient.prepare/enqueue/retry/wake` to the queue of each kind
 * enqueued; a wake-up due later than 15 minutes is a Scheduler schedule (CreateSchedule + PassRole).
 */

/**
 * Item-level DynamoDB actions redial's stores use. Scan and table management are never granted;
 * BatchWriteItem only where a batch's contacts' items are written (store.ts `putItems`: the data items of a
 * new batch, an import's staged chunks and pages), never to a public function.
 */
export type ItemAction = 'GetItem' | 'BatchGetItem' | 'Query' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'ConditionCheckItem' | 'BatchWriteItem';

/** One table's grant. */
export interface TableAccess {
  /** Actions on the table's items. */
  readonly actions: readonly ItemAction[];
  /** Secondary indexes it queries, by name (Query on each index's own ARN; never `index/*`). */
  readonly indexes?: readonly string[];
  /**
   * Only items whose partition key starts with one of these prefixes (`dynamodb:LeadingKeys`, StringLike:
   * a `*` inside one matches any run of characters, as `TENANT#*#ENDPOINT#` matches every tenant's
   * endpoints): a function that only writes events to the webhooks table can never read or overwrite an
   * endpoint (its secret).
   */
  readonly partitionKeyPrefixes?: readonly string[];
  /**
   * Only these attributes may be read (`dynamodb:Attributes`, with `dynamodb:Select` SPECIFIC_ATTRIBUTES):
   * a function that routes events by an endpoint's subscription and lease never sees its secret.
   */
  readonly attributes?: readonly string[];
  /** Only these `ReturnValues` (`dynamodb:ReturnValues`): a write limited to some attributes must not read the item back whole. */
  readonly returnValues?: readonly ('NONE' | 'UPDATED_OLD' | 'UPDATED_NEW')[];
}

/** Everything a function may do besides writing its own logs and traces. */
export interface FunctionAccess {
  /** Per table, one grant, or several (each its own statement: reads of some attributes, writes of some keys). */
  readonly tables: Partial<Record<TableKey, TableAccess | readonly TableAccess[]>>;
  /** Job queues it sends wake-ups to (sqs:SendMessage). */
  readonly sendTo: readonly QueueName[];
  /**
   * Scheduler: `create` one-time wake-ups in the job group (and pass the Scheduler role, to Scheduler
   * only); `delete` them, for the job layer's clean-up of schedules a job no longer needs.
   */
  readonly schedules?: { readonly create?: true; readonly delete?: true };
  /** Reads the call-result intake's signing secret (Secrets Manager), once per cold start. */
  readonly callWebhookSecret?: true;
  /** Sends mail through SES, as the configured identity only. */
  readonly sendMail?: true;
  /** Uses the key that encrypts webhook endpoint secrets at rest. */
  readonly webhookSecretsKey?: readonly ('encrypt' | 'decrypt')[];
  /**
   * Uses the same key for calendars' credentials (functions/calendar/credentials.ts): only under a
   * calendar's encryption context (exactly `calendarId` and `tenantId`), never an endpoint's.
   */
  readonly calendarCredentialsKey?: readonly ('encrypt' | 'decrypt')[];
  /**
   * The contacts uploads' bucket (functions/calls/imports): `put` signs upload URLs (a presigned PUT acts with
   * the signer's rights), `get` reads an uploaded file for its import. Objects only, never the bucket itself.
   */
  readonly uploads?: readonly ('put' | 'get')[];
}

/** The functions that serve HTTP, the rescuer, and one worker per job queue. */
export type ServingFunction = 'intake' | 'calendarTools' | 'publicLinks' | 'tenantApi' | 'api' | 'rescuer';

/**
 * What a worker's kinds make the job layer do with schedules (functions/jobs/dispatch.ts, apply.ts):
 * `create` where one of them can wait longer than SQS's 15-minute delay (a snooze, a retry's backoff),
 * `delete` where one of them wakes or takes on a waiting job before its schedule fires (`wake`,
 * `claimNext`: the webhooks context's parked deliveries). A worker's claim of its own job never finds a
 * schedule still to come (a claim needs the job due, and its schedule is for the same time); a delete
 * that is refused only leaves the schedule to fire into a stale wake-up, which is dropped.
 */
type WorkerSchedules = FunctionAccess['schedules'];

/** A worker's access: the executor's own writes, plus what its handlers do. */
const worker = (access: Omit<FunctionAccess, 'schedules'>, ownQueue: QueueName, schedules: WorkerSchedules): FunctionAccess => {
  const jobs = access.tables.jobs as TableAccess | undefined;
  return {
    ...access,
    // The executor (functions/jobs/executor.ts): claim, complete/retry/snooze/discard, cancelRequested,
    // recordPeriodic — all UpdateItem on the job row, and a GetItem of it when a discard's write got no
    // answer (functions/jobs/discards.ts: was it written?); a retry or snooze wakes the job on its own
    // queue, by SQS or, beyond 15 minutes, by a schedule (`schedules`).
    tables: { ...access.tables, jobs: { actions: union(['GetItem', 'UpdateItem'], jobs?.actions ?? []), ...(jobs?.indexes ? { indexes: jobs.indexes } : {}) } },
    sendTo: union([ownQueue], access.sendTo),
    ...(schedules ? { schedules } : {}),
  };
};

const union = <T>(a: readonly T[], b: readonly T[]): T[] => [...new Set([...a, ...b])];

/**
 * What publishing an event touches in the webhooks table (functions/webhooks/publish.ts): the tenant's
 * endpoints read for their routing attributes only (never the secret: `ROUTING_ATTRIBUTES` in
 * functions/webhooks/store.ts, a test holds the two lists together), a free endpoint's lease taken for
 * the delivery committed to it (its lease attributes only, nothing read back), the entries of
 * deliveries put behind a busy endpoint, and the event kept 30 days for recovery (kept-events.ts).
 */
const publishing: readonly TableAccess[] = [
  // A tenant's endpoint entries (`TENANT#<tenantId>`) and its endpoints' rows (`TENANT#<tenantId>#ENDPOINT#…`).
  { actions: ['GetItem', 'BatchGetItem', 'Query'], partitionKeyPrefixes: ['TENANT#'], attributes: ['pk', 'sk', 'endpointId', 'tenantId', 'eventTypes', 'disabled', 'holder', 'busyUntil'] },
  // The lease of a free endpoint, taken for the delivery just committed to it (`LEASE_ATTRIBUTES`, `takeLeaseFor`).
  { actions: ['UpdateItem'], partitionKeyPrefixes: ['TENANT#*#ENDPOINT#'], attributes: ['pk', 'sk', 'disabled', 'holder', 'busyUntil', 'watch'], returnValues: ['NONE'] },
  { actions: ['PutItem'], partitionKeyPrefixes: ['TENANT#*#WAITLIST#', 'TENANT#*#EVENTS#'] },
];

/**
 * The HTTP-serving functions and the rescuer. Public routes (no IAM) are served by `intake` and
 * `publicLinks` only, and neither can Scan, Delete, BatchWrite, or read the webhooks table.
 */
export const FUNCTION_ACCESS: Readonly<Record<ServingFunction, FunctionAccess>> = {
  /**
   * `POST /v1/calls/webhook` (functions/calls/api.ts, the intake route → functions/calls/completion.ts
   * `completeCall`): reads the batch (BatchConfigCache → `getBatch`) and, after a contended transaction,
   * the contact (`getContact`); publishing call.completed reads the tenant's endpoints' routing (never the
   * secret) and, after the commit, the lease of a busy one; ONE transaction updates contact, tenant and
   * batch, puts the event's deliveries (a webhook.deliver job, or a wait-list entry behind a busy endpoint,
   * or one webhook.fanout job beyond five endpoints) and the round's finaliser job when this was its last
   * call (it touches no existing job: the call's watchdog is left to find it Completed), and puts the
   * call's attempt item (PutItem on the calls table: the attempt and its artefacts); then wakes the
   * deliveries (deliveries queue), a fanout or a restart of a list whose lease was let go (webhooks queue)
   * and the finaliser (calls queue), all due at once.
   */
  intake: {
    tables: {
      calls: { actions: ['GetItem', 'PutItem', 'UpdateItem'] },
      jobs: { actions: ['PutItem'] },
      webhooks: publishing,
    },
    sendTo: ['calls', 'deliveries', 'webhooks'],
    callWebhookSecret: true,
  },
  /**
   * The agent's calendar tools during a call (functions/calendar: the calendar context's `auth: 'none'`
   * routes, signed with the intake's secret, so it reads that secret once per cold start): a batch's
   * settings read and its call's liveness checked by ConditionChecks in the hold's transaction (GetItem and
   * ConditionCheckItem on the tenant's items of the calls table, nothing written there); the calendar's
   * settings, its hold cells, appointments and call pointers (GetItem, Query of the held cells, PutItem,
   * UpdateItem, DeleteItem on the tenant's items of the calendar table); the settle job written in the
   * hold's transaction (PutItem in the jobs table) and woken on the calendar queue; appointment events
   * published with Booked and Cancelled (functions/webhooks/publish.ts), woken on the deliveries and
   * webhooks queues; calendars' credentials opened (decrypt, under a calendar's context only).
   */
  calendarTools: {
    tables: {
      calls: { actions: ['GetItem', 'ConditionCheckItem'], partitionKeyPrefixes: ['TENANT#'] },
      calendar: { actions: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'], partitionKeyPrefixes: ['TENANT#'] },
      jobs: { actions: ['PutItem'] },
      webhooks: publishing,
    },
    sendTo: ['calendar', 'deliveries', 'webhooks'],
    callWebhookSecret: true,
    calendarCredentialsKey: ['decrypt'],
  },
  /**
   * The mail links (functions/mail/routes.ts, the `auth: 'none'` routes) and `GET /healthz`: confirming an
   * owner address (`MailStore.confirmEmail`) and deciding an access request (`resolveAccessRequest`), each
   * one conditional UpdateItem of a tenant's row; the GET previews and the health check touch nothing.
   */
  publicLinks: {
    tables: { mail: { actions: ['UpdateItem'], partitionKeyPrefixes: ['TENANT#'] } },
    sendTo: [],
  },
  /**
   * The tenant routes (functions/app/system.ts `routesServedBy(system, 'tenantApi')`, `auth: 'tenant'`),
   * every request acting for the tenant of the API key it presented:
   * - the key check (functions/calls/keys.ts): GetItem of the key's item, UpdateItem of its lastUsedAt;
   * - the tenant and its batches (functions/calls/api.ts): `getTenant` (BatchGetItem of the row and its slot
   *   shards), `getBatch` (GetItem), batch creation (PutItem of batch, list pages and its two index entries,
   *   ConditionCheckItem of the tenant), the tenant's listing (Query of its index, BatchGetItem of the rows),
   *   rounds and contacts pages (Query of the batch's partition, BatchGetItem of contact rows), batch delete
   *   (UpdateItem of the batch and its slot shards); the round-1 dialer (PutItem in the jobs table, woken on
   *   the dial queue), the dialer's cancel request on delete (UpdateItem);
   * - endpoints (functions/webhooks/endpoints.ts): register (PutItem of the row and its two index entries in
   *   a transaction; the secret encrypted, and decrypted again for an idempotent replay), the tenant's
   *   listing (Query of its partition, BatchGetItem of the rows), show (GetItem; Query counting its wait
   *   list), deliveries (the jobs' listing: Query of `byCheck` and `byDeadLetter`, BatchGetItem of the rows),
   *   enable (UpdateItem), redeliver (Query of discard markers, GetItem and UpdateItem of each job and the
   *   counters, conditional DeleteItem of each marker; a retried job runs now on the deliveries queue, and
   *   may leave a schedule to delete); change (UpdateItem; a new URL wakes the lease holder on the
   *   deliveries queue, or enqueues a webhook.restart on the webhooks queue), delete (UpdateItem of the row,
   *   DeleteItem of its two index entries and the webhook.purge job's PutItem in one transaction, woken on
   *   the webhooks queue), rotate-secret (the new secret encrypted; UpdateItem) (functions/webhooks/manage.ts);
   *   the attempt log (Query of the endpoint's attempt partition,
   *   functions/webhooks/attempt-log.ts), recover (PutItem of the recovery row and of its webhook.recover
   *   job in a transaction, woken on the webhooks queue) and a recovery shown (GetItem);
   * - contacts uploads (functions/calls/imports): an upload URL signed (s3:PutObject, used by the client),
   *   the uploaded file read for its import (s3:GetObject);
   * - the suppression list (functions/calls/compliance/suppression-api.ts, suppression-store.ts): a put
   *   (UpdateItem of the entry, PutItem of its audit record, in a transaction), a removal (DeleteItem of the
   *   entry, only if it exists, and PutItem of its audit record), the listing (Query of each shard), an
   *   import (BatchWriteItem of its staged chunks; PutItem of its row and of its job, woken on the calls
   *   queue) and its progress (Query);
   * - calendars (functions/calendar/settings-api.ts, settings-store.ts): a put (UpdateItem of the calendar
   *   and of its listing entry in a transaction; the credentials encrypted under the calendar's context),
   *   show (GetItem), the listing (Query of the tenant's listing, BatchGetItem of the items), delete (GetItem,
   *   BatchGetItem of the batches that name it in the calls table, DeleteItem of the calendar and its entry
   *   in a transaction, or UpdateItem pruning finished batches); a batch naming a calendar reads it and
   *   records itself on it in the batch's transaction (GetItem, UpdateItem).
   * Every item of the calls and webhooks tables it touches is a tenant's (`TENANT#…`), or an entry in the
   * operators' indexes it writes beside a new batch or endpoint (`BATCHES`, `ENDPOINTS`).
   */
  tenantApi: {
    tables: {
      calls: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem', 'BatchWriteItem'], partitionKeyPrefixes: ['TENANT#', 'BATCHES'] },
      jobs: { actions: ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'], indexes: ['byCheck', 'byDeadLetter'] },
      webhooks: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'], partitionKeyPrefixes: ['TENANT#', 'ENDPOINTS'] },
      calendar: { actions: ['GetItem', 'BatchGetItem', 'Query', 'UpdateItem', 'DeleteItem'], partitionKeyPrefixes: ['TENANT#'] },
    },
    sendTo: ['dial', 'calls', 'deliveries', 'webhooks'],
    // create: a batch's start job at a `startAt` (up to 30 days ahead) and a pause's expiry job (30 days on)
    // are due beyond 15 minutes, so they wait on a schedule (functions/calls/control/).
    schedules: { create: true, delete: true },
    webhookSecretsKey: ['encrypt', 'decrypt'],
    calendarCredentialsKey: ['encrypt'],
    uploads: ['put', 'get'],
  },
  /**
   * Every IAM route (functions/app/system.ts `routesServedBy(system, 'api')`, `auth: 'iam'`): the operator
   * copies of the tenant routes (`/v1/ops/tenants/{tenantId}/…`, the same handlers as `tenantApi`'s, with the
   * same needs), and
   * - tenants and their keys (functions/calls/api.ts, keys-api.ts): the tenant upsert (UpdateItem of the row
   *   and its slot shards), keys issued (PutItem, ConditionCheckItem of the tenant), listed (Query) and
   *   revoked (UpdateItem); every tenant's batches (Query of the operators' index, BatchGetItem of the rows);
   * - the owner address and access requests (functions/mail/owner.ts, access.ts, routes.ts): GetItem,
   *   UpdateItem (pending address), PutItem (request rows), Query (notices);
   * - every tenant's endpoints (functions/webhooks/api.ts): Query of the operators' index, BatchGetItem of
   *   the rows;
   * - ops jobs (functions/ops/jobs-api.ts → functions/jobs/client.ts, listing.ts, counts.ts): get
   *   (GetItem), list and bulk retry/cancel (Query of `byCheck` then BatchGetItem of the rows, or Query of
   *   `byDeadLetter`), counts (BatchGetItem of the counter items), retry and cancel (UpdateItem, and the
   *   counters' UpdateItem), enqueue (PutItem): the dialer, mail and probe jobs;
   * - the suppression lists' removals (DeleteItem of an entry, in the operator copies of the tenant routes);
   * - wake-ups: a retried job runs now, on its own queue (any of them). The operator copies of the batch
   *   control routes enqueue a start job at a `startAt` and a pause's expiry job 30 days on: beyond 15
   *   minutes, so they create schedules; it deletes one when ops cancel or retry a job that waits on one;
   * - calendars, in the operator copies of the tenant routes: as `tenantApi`'s (the calendar table; the
   *   credentials encrypted under a calendar's context).
   */
  api: {
    tables: {
      calls: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem', 'BatchWriteItem'] },
      mail: { actions: ['GetItem', 'Query', 'PutItem', 'UpdateItem'] },
      jobs: { actions: ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'], indexes: ['byCheck', 'byDeadLetter'] },
      webhooks: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'] },
      calendar: { actions: ['GetItem', 'BatchGetItem', 'Query', 'UpdateItem', 'DeleteItem'] },
    },
    sendTo: ['ops', 'dial', 'calls', 'deliveries', 'webhooks', 'mail', 'calendar'],
    schedules: { create: true, delete: true },
    webhookSecretsKey: ['encrypt', 'decrypt'],
    calendarCredentialsKey: ['encrypt'],
    uploads: ['put', 'get'],
  },
  /**
   * The rescuer (functions/jobs/rescuer.ts): its walk (Query of `byCheck`, BatchGetItem of the rows and of
   * its watermarks), `rescue`, `touchDispatch` and `recheck`, its watermarks and the counters
   * (UpdateItem), periodic jobs (`JobClient.enqueue`: PutItem); a discard of a lost attempt whose write got
   * no answer is read back (GetItem, functions/jobs/discards.ts); it wakes jobs of every queue, and a
   * rescued job's backoff may be longer than 15 minutes (a schedule). A last attempt it discards runs the
   * kind's discard hook: webhook.deliver's writes the endpoint's discard marker (PutItem on
   * `TENANT#<tenantId>#ENDPOINT#…`, functions/webhooks/delivery.ts `discarded`).
   */
  rescuer: {
    tables: { jobs: { actions: ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'], indexes: ['byCheck'] }, webhooks: { actions: ['PutItem'], partitionKeyPrefixes: ['TENANT#*#ENDPOINT#'] } },
    sendTo: ['ops', 'dial', 'calls', 'deliveries', 'webhooks', 'mail', 'calendar'],
    schedules: { create: true },
  },
};

/** One worker per job queue (functions/<queue>/lambda/worker.ts), with what its handlers touch. */
export const WORKER_ACCESS: Readonly<Record<QueueName, FunctionAccess>> = {
  /**
   * ops.probe (functions/ops/probe.ts) touches nothing: the executor's writes only. It never waits on a
   * schedule: it does not snooze, and its policy's longest backoff (after its 9th attempt of 10) is 256 s.
   */
  ops: worker({ tables: {}, sendTo: [] }, 'ops', undefined),
  /**
   * calls.dial (functions/calls/dialer.ts): GetItem (batch, list page, tenant; the contact after a contended
   * completion), BatchGetItem (the tenant's slot shards, once a run; the contacts' data), Query (each number's
   * cap slots, the deferred list), UpdateItem (dial, skip, a contact ended without a call, and the completion
   * of a call the placer refused), PutItem/DeleteItem/ConditionCheckItem (compliance/dial-items.ts); jobs put in the
   * same transactions (the run's watchdog, the finaliser when a skip ends the round, the refused call's
   * deliveries); publishing its call.completed (functions/webhooks/publish.ts); wakes watchdogs and
   * finalisers (calls), deliveries, and a fanout or a restart (webhooks).
   */
  dial: worker(
    {
      tables: {
        // PutItem: a placer's refusal completes its call with INTERNAL_ERROR, which puts the call's attempt
        // item; and each dial's cap slot claim, and a deferral's entry and mark. Query: the numbers' cap slots
        // and the deferred list; ConditionCheckItem: each dialled number's suppression entry; DeleteItem: a
        // deferred entry taken off the list (compliance/dial-items.ts).
        calls: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'] },
        jobs: { actions: ['PutItem'] },
        webhooks: publishing,
      },
      sendTo: ['calls', 'deliveries', 'webhooks'],
    },
    'dial',
    // A dial outside its batch's calling window snoozes until it opens (functions/calls/dialer.ts).
    { create: true },
  ),
  /**
   * calls.import (functions/calls/imports/job.ts): Query (a staged chunk of the batch's contacts), BatchWriteItem
   * (a page's data items), PutItem (the page's list page) and UpdateItem (the batch's import cursor) in one
   * transaction, the round-1 dialer (PutItem in the jobs table, woken on the dial queue).
   * calls.watchdog, calls.finalise (functions/calls/watchdog.ts, finaliser.ts): GetItem (batch, list page,
   * contact), BatchGetItem (a page's contacts), UpdateItem (completion, promotion, finalise, re-arm),
   * PutItem (the next round's list page); a watchdog whose batch no longer names it open reads its
   * successor's job (GetItem) to learn where its run stopped; jobs put in the same transactions (finaliser, next dialer,
   * the events' deliveries, owner.notify); publishing events (functions/webhooks/publish.ts); wakes dial,
   * calls, deliveries, webhooks and mail jobs.
   */
  calls: worker(
    {
      tables: {
        calls: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'BatchWriteItem'] },
        jobs: { actions: ['PutItem'] },
        webhooks: publishing,
      },
      sendTo: ['dial', 'deliveries', 'webhooks', 'mail'],
    },
    'calls',
    // A watchdog snoozes until its calls time out (CALL_TIMEOUT_SECONDS, up to a day); a finaliser
    // schedules the next round after the batch's retry backoff.
    { create: true },
  ),
  /**
   * webhook.deliver (functions/webhooks/delivery.ts, waitlist.ts → store.ts): GetItem (endpoint; a stored
   * event of a delivery enqueued before events travelled with jobs), BatchGetItem (delivery read), Query
   * (wait list, and its count), PutItem (park, discard marker, one attempt row per attempt:
   * functions/webhooks/attempt-log.ts), UpdateItem (lease, health, disable),
   * DeleteItem (unpark, and a delivery sent from the list); claims the next parked delivery (`runNext`) or
   * wakes it (UpdateItem); makes a job of a delivery from the list that failed (`enqueueAttempted`) or that
   * is handed the lease (`promote`: PutItem, and GetItem of one made already), enqueues webhook.wake
   * (PutItem, webhooks queue); decrypts endpoint secrets to sign.
   */
  deliveries: worker(
    {
      tables: {
        webhooks: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'] },
        jobs: { actions: ['GetItem', 'PutItem', 'UpdateItem'] },
      },
      sendTo: ['webhooks'],
      webhookSecretsKey: ['decrypt'],
    },
    'deliveries',
    // Retries of 30 minutes to 10 hours, a Retry-After, a failing endpoint's next probe; it takes on a
    // parked delivery (claimNext) or wakes one, whose own backoff may have a schedule to come.
    { create: true, delete: true },
  ),
  /**
   * webhook.fanout, webhook.wake, webhook.restart, webhook.sweep (functions/webhooks/fanout.ts, context.ts,
   * sweep.ts, waitlist.ts → store.ts): GetItem (a stored event, endpoint), BatchGetItem and Query (tenant
   * endpoints), Query (wait list; `byWatch` for the sweep), PutItem (a delivery's entry behind a busy
   * endpoint, a promoted one rewritten), UpdateItem (lease given to a waiter, disable, release, unwatch),
   * DeleteItem (a stale entry); enqueues deliveries (PutItem, and GetItem of one a repeated fanout finds),
   * discards waiting ones of a disabled endpoint (`enqueueAttempted`: PutItem), wakes parked ones
   * (UpdateItem) on the deliveries queue; webhook.purge (manage.ts) discards what waited for a deleted
   * endpoint the same way; webhook.notice (notices.ts) commits an endpoint's notice (the event's deliveries,
   * the owner's owner.notify job: PutItem; noticedAt: UpdateItem) and wakes the mail on the mail queue.
   * webhook.recover (functions/webhooks/recover.ts): GetItem (the
   * recovery, the endpoint, each candidate's original delivery job), Query (the tenant's kept events;
   * `byReceived` per event), BatchGetItem (wait-list entries), a transaction per page (UpdateItem of the
   * recovery, PutItem of the requeued deliveries, DeleteItem of their originals' discard markers), woken
   * on the deliveries queue.
   */
  webhooks: worker(
    {
      tables: {
        webhooks: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'], indexes: ['byWatch', 'byReceived'] },
        jobs: { actions: ['GetItem', 'PutItem', 'UpdateItem'] },
      },
      sendTo: ['deliveries', 'mail'],
    },
    'webhooks',
    // A delivery made a job with its failed attempt as its first waits out that attempt's backoff (up to
    // 10 hours); webhook.wake wakes a waiting delivery whose own backoff may have a schedule to come.
    { create: true, delete: true },
  ),
  /**
   * owner.notify, access_request.approval_mail, owner.email_confirmation (functions/mail/handlers.ts →
   * store.ts): GetItem (notice, owner, request), PutItem (notice), UpdateItem (cap slots, mailed marks); sends
   * through SES.
   */
  mail: worker(
    {
      tables: { mail: { actions: ['GetItem', 'PutItem', 'UpdateItem'] } },
      sendTo: [],
      sendMail: true,
    },
    'mail',
    // A message over a cap snoozes until the cap's hour ends (functions/mail/handlers.ts).
    { create: true },
  ),
  /**
   * supplier.invoke (functions/calendar/settle-job.ts, `calendar.settle`): reads the hold and its
   * appointment (GetItem), abandons a hold the route never committed and commits a cancellation (UpdateItem,
   * in a transaction with the appointment.cancelled event: publishing, woken on the deliveries and webhooks
   * queues), all on the tenant's items of the calendar table; opens the calendar's credentials (decrypt,
   * under a calendar's context only) to read and delete the event in the calendar.
   */
  calendar: worker(
    {
      tables: {
        calendar: { actions: ['GetItem', 'UpdateItem'], partitionKeyPrefixes: ['TENANT#'] },
        webhooks: publishing,
        jobs: { actions: ['PutItem'] },
      },
      sendTo: ['deliveries', 'webhooks'],
      calendarCredentialsKey: ['decrypt'],
    },
    'calendar',
    // Its backoff reaches 2 hours, and a settle waits (snoozes) up to 10 minutes for a late insert.
    { create: true },
  ),
};
