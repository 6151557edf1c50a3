import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { ManualClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { createSmtpClient } from '../../functions/platform/smtp.ts';
import { startSmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import type { SinkMessage, SinkScript, SmtpSink } from '../../functions/platform/local/smtp-sink.ts';
import { settler } from './jobs.ts';
import type { MailConfig } from '../../functions/mail/config.ts';
import type { MailDeps } from '../../functions/mail/context.ts';
import { ownerNotifyKind } from '../../functions/mail/kinds.ts';
import { createLocalHost } from '../../functions/local/host.ts';
import { SmtpMailTransport } from '../../functions/mail/smtp-transport.ts';
import type { MailTransport } from '../../functions/mail/transport.ts';
import { freshTables } from './dynamo.ts';

export const TEST_MAIL_DOMAIN = 'test.redial';

/**
 * The mail context on DynamoDB Local, a manual clock and the local runtime's in-process queues, sending
 * through a real SMTP server (the sink, scriptable) unless a transport is given. `settle()` advances the
 * clock timer by timer until nothing is left to run.
 */
export async function mailFixture(options: { script?: SinkScript; transport?: MailTransport; publicBaseUrl?: string; seed?: number } = {}) {
  const sink = await startSmtpSink(options.script ? { script: options.script } : {});
  const { clients, tableNames } = await freshTables();
  const clock = new ManualClock();
  const metrics = new MemoryMetrics();
  const logger = createLogger('test');
  const config: MailConfig = {
    domain: TEST_MAIL_DOMAIN,
    from: `redial <no-reply@${TEST_MAIL_DOMAIN}>`,
    publicBaseUrl: options.publicBaseUrl ?? 'http://127.0.0.1:9',
    transport: { type: 'smtp', url: sink.url },
  };
  const transport = options.transport ?? new SmtpMailTransport(createSmtpClient({ url: sink.url, connectionTimeoutMs: 2000, greetingTimeoutMs: 2000, socketTimeoutMs: 5000 }));
  const host = await createLocalHost({
    db: clients.dynamo,
    tableNames,
    clock,
    rng: seededRng(options.seed ?? 7),
    logger,
    metrics,
    workers: ['mail'],
    contexts: { mail: { config, transport } },
  });
  const { jobs } = host;
  const deps: MailDeps = host.system.mail;
  const store = deps.store;
  const idle = () => host.idle();

  const settle = settler(clock, idle);

  /** Enqueues an owner.notify for a batch.finalised event. */
  const notify = (tenantId: string, eventId: string, byCode: Record<string, number> = { COMPLETED: 3, NO_PICKUP: 1 }) =>
    jobs.client.enqueue(ownerNotifyKind, { tenantId, eventId, template: 'batch.finalised', data: { batchId: `b_${eventId}`, rounds: 2, maxAttempts: 3, byCode } });

  /** Commits prepared transaction items (a caller's transaction) without waking the jobs in them. */
  const commitOnly = (items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']>) =>
    clients.dynamo.send(new TransactWriteCommand({ TransactItems: items }));

  /** The mail context's handlers, as its worker runs them (the rescuer prices lost attempts by their kinds). */
  const handlers = host.system.handlers('mail');

  return { sink, clients, tableNames, clock, metrics, logger, jobs, deps, store, config, handlers, settle, idle, notify, commitOnly, stop: async () => {
    await host.stop();
    await sink.stop();
  } };
}

export type MailFixture = Awaited<ReturnType<typeof mailFixture>>;

/** The first link in a message's text body whose path ends as given. */
export function linkIn(message: SinkMessage, pathEnd: string): string {
  const links = (message.text ?? '').match(/https?:\/\/\S+/g) ?? [];
  const link = links.find((l) => new URL(l).pathname.endsWith(pathEnd));
  if (!link) throw new Error(`no link ending in ${pathEnd} in:\n${message.text}`);
  return link;
}

export type { SmtpSink };
