import { createHash, randomUUID } from 'node:crypto';
import type { TransactOutcome } from '../platform/dynamo.ts';
import type { JobContext, PreparedJob, TransactItem } from '../jobs/index.ts';
import type { WebhookDeps } from './deps.ts';
import { EventType } from './events.ts';
import { Notice, webhookNoticeKind } from './kinds.ts';

export { Notice, webhookNoticeKind };
import type { Publisher } from './publish.ts';

/**
 * Notices about an endpoint (docs/webhooks.md, "Notices"):
 *
 * ```
 *  redial disables it (410, or failing 5 days) ─► webhook.notice (disabled), from the delivery or the sweep
 *      one transaction: the endpoint.disabled event's deliveries to the tenant's other subscribed endpoints,
 *      the owner's owner.notify mail (exempt from the burst cap), and `noticedAt = disabledAt` on the
 *      endpoint (only once per disable: a second notice job finds it noticed and does nothing)
 *  its owner enables it ─► webhook.notice (enabled), committed with the enable: endpoint.enabled to the others
 * ```
 *
 * Event ids follow from the endpoint, the notice and its time, so a notice run again publishes the same event.
 */

/** What the webhooks context asks of the mail context (wired by the app; a host without mail sends none). */
export interface OwnerMailPort {
  /** The owner.notify job telling the tenant's owner an endpoint was disabled, for the notice's transaction. */
  endpointDisabled(input: { tenantId: string; eventId: string; data: { endpointId: string; url: string; reason: string; disabledAt: string } }): { items: TransactItem[]; jobs: PreparedJob[] };
}


/** The id of a notice's event: `evt_` and 32 hex of its endpoint, notice and time. */
export const noticeEventId = (endpointId: string, notice: Notice, at: string): string =>
  `evt_${createHash('sha256').update(`${endpointId}:${notice}:${at}`).digest('hex').slice(0, 32)}`;

/** The webhook.notice job for a disable seen at `at` (deterministic: seen twice at the same time, enqueued once). */
export const disabledNoticeJob = (endpointId: string, at: string) => ({ args: { endpointId, notice: Notice.disabled, at }, id: `webhook.notice:${endpointId}:disabled:${at}` });

/** The webhook.notice job for an enable at `at`: one per enable (committed with it), so its id is new each time. */
export const enabledNoticeJob = (endpointId: string, at: string) => ({ args: { endpointId, notice: Notice.enabled, at }, id: `webhook.notice:${endpointId}:enabled:${randomUUID()}` });

/**
 * The webhook.notice handler. A disabled notice acts on the endpoint's current disable only (its
 * `disabledAt`), and only if it is not noticed yet; an enabled notice only while the endpoint is still enabled.
 * A deleted endpoint gets none.
 */
export async function sendNotice(deps: WebhookDeps, publisher: Publisher, args: { endpointId: string; notice: Notice; at: string }, ctx: JobContext): Promise<'sent' | 'nothing'> {
  const { store } = deps;
  const row = await store.getEndpoint(args.endpointId);
  if (!row || row.deletedAt !== undefined) return 'nothing';
  const now = ctx.now();
  if (args.notice === Notice.disabled) {
    if (!row.disabled || row.disabledAt === undefined || row.noticedAt === row.disabledAt || row.disabledReason === undefined) return 'nothing';
    const eventId = noticeEventId(row.endpointId, Notice.disabled, row.disabledAt);
    const data = { endpointId: row.endpointId, url: row.url, reason: row.disabledReason, disabledAt: row.disabledAt };
    const published = await publisher.prepare({ tenantId: row.tenantId, type: EventType.endpointDisabled, data, id: eventId }, now, { exclude: [row.endpointId] });
    const mail = deps.ownerMail?.endpointDisabled({ tenantId: row.tenantId, eventId, data }) ?? { items: [], jobs: [] };
    const result = await store.transact([...published.items, ...mail.items, store.noticedItem(row.endpointId, row.disabledAt)]);
    if (!result.committed) {
      await published.abandon();
      // Noticed already (another notice job), or enabled meanwhile: nothing to do.
      if (refusedFor(result, 'noticed')) return 'nothing';
      throw result.error;
    }
    await Promise.all([published.afterCommit(), deps.jobs.afterCommit(mail.jobs)]);
    ctx.logger.info('endpoint disabled: notice sent', { endpointId: row.endpointId, eventId, mailed: mail.jobs.length > 0 });
    return 'sent';
  }
  if (row.disabled) return 'nothing';
  const eventId = noticeEventId(row.endpointId, Notice.enabled, ctx.id);
  const published = await publisher.prepare({ tenantId: row.tenantId, type: EventType.endpointEnabled, data: { endpointId: row.endpointId, url: row.url, enabledAt: args.at }, id: eventId }, now, { exclude: [row.endpointId] });
  if (published.items.length === 0) return 'nothing';
  const result = await store.transact(published.items);
  if (!result.committed) {
    await published.abandon();
    // Its jobs exist already: this notice ran before and committed.
    if (!result.contention && Object.values(result.refused).some((r) => r?.code === 'ConditionalCheckFailed')) return 'nothing';
    throw result.error;
  }
  await published.afterCommit();
  return 'sent';
}

const refusedFor = (result: Exclude<TransactOutcome, { committed: true }>, name: string): boolean => !result.contention && result.refused[name]?.code === 'ConditionalCheckFailed';
