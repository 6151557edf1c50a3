// A mail worker process for the send-then-mark crash test: it claims one job and runs the real mail
// handlers with the real SMTP transport, but once the server has accepted the message it tells its parent
// "sent" and never returns, so the mark is never written. The parent kills it with SIGKILL.
import { createAwsClients, localCredentials } from '../../functions/platform/aws.ts';
import { systemClock } from '../../functions/platform/clock.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { MemoryMetrics } from '../../functions/platform/metrics.ts';
import { seededRng } from '../../functions/platform/rng.ts';
import { createSmtpClient } from '../../functions/platform/smtp.ts';
import { createLocalHost } from '../../functions/local/host.ts';
import { SmtpMailTransport } from '../../functions/mail/smtp-transport.ts';
import type { MailTransport } from '../../functions/mail/transport.ts';

const [endpoint, jobsTable, mailTable, smtpUrl, domain, jobId] = process.argv.slice(2) as [string, string, string, string, string, string];
const clients = createAwsClients({ region: 'local', endpoints: { dynamodb: endpoint }, credentials: localCredentials });
const logger = createLogger('mail-crash-worker');
const real = new SmtpMailTransport(createSmtpClient({ url: smtpUrl }));
const crashesAfterSend: MailTransport = {
  name: 'smtp',
  send: async (mail, signal) => {
    await real.send(mail, signal);
    process.stdout.write('sent\n');
    return new Promise(() => undefined);
  },
};
const host = await createLocalHost({
  db: clients.dynamo,
  // Only the jobs and mail tables are touched here.
  tableNames: { jobs: jobsTable, mail: mailTable, calls: 'unused', webhooks: 'unused', calendar: 'unused' },
  clock: systemClock,
  rng: seededRng(1),
  logger,
  metrics: new MemoryMetrics(),
  transport: { sendMessage: () => Promise.resolve(), createSchedule: () => Promise.resolve(), deleteSchedule: () => Promise.resolve() },
  workers: [],
  contexts: {
    mail: { config: { domain, from: `redial <no-reply@${domain}>`, publicBaseUrl: 'http://127.0.0.1:9', transport: { type: 'smtp', url: smtpUrl } }, transport: crashesAfterSend },
  },
});
await host.jobs.executor('mail', host.system.handlers('mail')).execute({ jobId, seq: 1 });
