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

/** Item-level DynamoDB actions redial's stores use. Scan, BatchWriteItem and table management are never granted. */
export type ItemAction = 'GetItem' | 'BatchGetItem' | 'Query' | 'PutItem' | 'UpdateItem' | 'DeleteItem' | 'ConditionCheckItem';

/** One table's grant. */
export interface TableAccess {
  /** Actions on the table's items. */
  readonly actions: readonly ItemAction[];
  /** Secondary indexes it queries, by name (Query on each index's own ARN; never `index/*`). */
  readonly indexes?: readonly string[];
  /**
   * Only items whose partition key starts with one of these prefixes (`dynamodb:LeadingKeys`): a function
   * that only writes events to the webhooks table can never read or overwrite an endpoint (its secret).
   */
  readonly partitionKeyPrefixes?: readonly string[];
}

/** Everything a function may do besides writing its own logs and traces. */
export interface FunctionAccess {
  readonly tables: Partial<Record<TableKey, TableAccess>>;
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
}

/** The functions that serve HTTP, the rescuer, and one worker per job queue. */
export type ServingFunction = 'intake' | 'publicLinks' | 'api' | 'rescuer';

/** A worker's access: the executor's own writes, plus what its handlers do. */
const worker = (access: Omit<FunctionAccess, 'schedules'>, ownQueue: QueueName): FunctionAccess => {
  const jobs = access.tables.jobs;
  return {
    ...access,
    // The executor (functions/jobs/executor.ts): claim, complete/retry/snooze/discard, cancelRequested,
    // recordPeriodic — all UpdateItem on the job row; a retry or snooze wakes the job on its own queue, by
    // SQS or, beyond 15 minutes, by a schedule.
    tables: { ...access.tables, jobs: { actions: union(['UpdateItem'], jobs?.actions ?? []), ...(jobs?.indexes ? { indexes: jobs.indexes } : {}) } },
    sendTo: union([ownQueue], access.sendTo),
    schedules: { create: true, delete: true },
  };
};

const union = <T>(a: readonly T[], b: readonly T[]): T[] => [...new Set([...a, ...b])];

/** The events a domain writes with its webhook.fanout job (functions/webhooks/events.ts `prepareEvent`). */
const eventsOnly: TableAccess = { actions: ['PutItem'], partitionKeyPrefixes: ['EVENT#'] };

/**
 * The HTTP-serving functions and the rescuer. Public routes (no IAM) are served by `intake` and
 * `publicLinks` only, and neither can Scan, Delete, BatchWrite, or read the webhooks table.
 */
export const FUNCTION_ACCESS: Readonly<Record<ServingFunction, FunctionAccess>> = {
  /**
   * `POST /v1/calls/webhook` (functions/calls/api.ts, the intake route → functions/calls/completion.ts
   * `completeCall`): reads the batch (BatchConfigCache → `getBatch`) and, after a contended transaction,
   * the contact (`getContact`); ONE transaction updates contact, tenant and batch, asks the watchdog to
   * stop (`requestCancelItem`, an UpdateItem of its job row), puts the call.completed event and its
   * webhook.fanout job, and the round's finaliser job when this was its last call; then wakes fanout
   * (webhooks queue) and the finaliser (calls queue), both due at once.
   */
  intake: {
    tables: {
      calls: { actions: ['GetItem', 'UpdateItem'] },
      jobs: { actions: ['PutItem', 'UpdateItem'] },
      webhooks: eventsOnly,
    },
    sendTo: ['calls', 'webhooks'],
    callWebhookSecret: true,
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
   * Every IAM route (functions/app/system.ts `routesServedBy(system, 'api')`, `auth: 'iam'`):
   * - tenants and batches (functions/calls/api.ts): `getTenant`/`getBatch` (GetItem), the tenant upsert and
   *   batch delete (UpdateItem), batch creation (PutItem of batch and list pages, ConditionCheckItem of the
   *   tenant), contacts pages (Query of list pages, BatchGetItem of contact rows);
   * - the owner address and access requests (functions/mail/owner.ts, access.ts, routes.ts): GetItem,
   *   UpdateItem (pending address), PutItem (request rows), Query (notices);
   * - endpoints (functions/webhooks/endpoints.ts): create (PutItem ×2 in a transaction), show (GetItem),
   *   enable (UpdateItem), redeliver (Query of discard markers, conditional DeleteItem of each);
   * - ops jobs (functions/ops/jobs-api.ts → functions/jobs/store.ts): get (GetItem), list and count (Query
   *   of `byState`), retry and cancel (UpdateItem), enqueue (PutItem): the dialer, mail and probe jobs;
   * - wake-ups: a retried job runs now, on its own queue (any of them); nothing the API enqueues is due
   *   later than 15 minutes, so it creates no schedule. It may delete one (ops cancel or retry a job that
   *   waits on a schedule).
   */
  api: {
    tables: {
      calls: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'ConditionCheckItem'] },
      mail: { actions: ['GetItem', 'Query', 'PutItem', 'UpdateItem'] },
      jobs: { actions: ['GetItem', 'PutItem', 'UpdateItem'], indexes: ['byState'] },
      webhooks: { actions: ['GetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'] },
    },
    sendTo: ['ops', 'calls', 'webhooks', 'mail'],
    schedules: { delete: true },
    webhookSecretsKey: ['encrypt', 'decrypt'],
  },
  /**
   * The rescuer (functions/jobs/rescuer.ts): `findDue` (Query of `byState`), `rescue` and `touchDispatch`
   * (UpdateItem), periodic jobs (`JobClient.enqueue`: PutItem); it wakes jobs of every queue, and a
   * rescued job's backoff may be longer than 15 minutes (a schedule). A last attempt it discards runs the
   * kind's discard hook: webhook.deliver's writes the endpoint's discard marker (PutItem on `ENDPOINT#…`,
   * functions/webhooks/delivery.ts `discarded`).
   */
  rescuer: {
    tables: { jobs: { actions: ['PutItem', 'UpdateItem'], indexes: ['byState'] }, webhooks: { actions: ['PutItem'], partitionKeyPrefixes: ['ENDPOINT#'] } },
    sendTo: ['ops', 'calls', 'webhooks', 'mail'],
    schedules: { create: true },
  },
};

/** One worker per job queue (functions/<queue>/lambda/worker.ts), with what its handlers touch. */
export const WORKER_ACCESS: Readonly<Record<QueueName, FunctionAccess>> = {
  /** ops.probe (functions/ops/probe.ts) touches nothing: the executor's writes only. */
  ops: worker({ tables: {}, sendTo: [] }, 'ops'),
  /**
   * calls.dial, calls.watchdog, calls.finalise (functions/calls/dialer.ts, watchdog.ts, finaliser.ts):
   * GetItem (batch, list page, tenant, contact), BatchGetItem (a page's contacts), UpdateItem (dial,
   * skip, completion, promotion, finalise, re-arm), PutItem (the next round's list page); jobs put in
   * the same transactions (watchdog, finaliser, next dialer, webhook.fanout, owner.notify) and the
   * watchdog's cancel request; events; wakes calls, webhooks and mail jobs.
   */
  calls: worker(
    {
      tables: {
        calls: { actions: ['GetItem', 'BatchGetItem', 'PutItem', 'UpdateItem'] },
        jobs: { actions: ['PutItem', 'UpdateItem'] },
        webhooks: eventsOnly,
      },
      sendTo: ['calls', 'webhooks', 'mail'],
    },
    'calls',
  ),
  /**
   * webhook.fanout, webhook.deliver, webhook.wake, webhook.sweep (functions/webhooks/fanout.ts,
   * delivery.ts, waitlist.ts, sweep.ts → store.ts): GetItem (endpoint, event), BatchGetItem (delivery read,
   * tenant endpoints), Query (tenant endpoints, wait list; `byWatch` for the sweep), PutItem (park, discard
   * marker), UpdateItem (lease, health, disable), DeleteItem (unpark); enqueues deliveries and wake jobs
   * (PutItem) and wakes parked deliveries (UpdateItem); decrypts endpoint secrets to sign.
   */
  webhooks: worker(
    {
      tables: {
        webhooks: { actions: ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem'], indexes: ['byWatch'] },
        jobs: { actions: ['PutItem', 'UpdateItem'] },
      },
      sendTo: ['webhooks'],
      webhookSecretsKey: ['decrypt'],
    },
    'webhooks',
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
  ),
};
