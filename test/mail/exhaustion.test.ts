import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DISCARD_ALERT_METRIC, DISCARD_METRIC } from '../../functions/jobs/executor.ts';
import { requestAccess } from '../../functions/mail/access.ts';
import { changeOwnerEmail } from '../../functions/mail/owner.ts';
import { SmtpMailTransport } from '../../functions/mail/smtp-transport.ts';
import { createSmtpClient } from '../../functions/platform/smtp.ts';
import { mailFixture } from '../support/mail.ts';
import type { MailFixture } from '../support/mail.ts';

let fx: MailFixture | undefined;
afterEach(async () => {
  await fx?.stop();
  fx = undefined;
});

/** An SMTP URL where nothing listens: every send fails with ECONNREFUSED, a retryable failure. */
async function deadSmtpUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `smtp://127.0.0.1:${port}`;
}

describe('mail kinds when their attempts run out', () => {
  it('EachMailKindIsDiscardedAsExhaustedAfterEightAttemptsAndFiresTheAlert', async () => {
    const transport = new SmtpMailTransport(createSmtpClient({ url: await deadSmtpUrl(), connectionTimeoutMs: 1000 }));
    fx = await mailFixture({ transport });
    await fx.store.putConfirmedContact('acme', 'owner@acme.test', fx.clock.now());
    const notify = await fx.notify('acme', 'evt_dead');
    const access = await requestAccess(fx.deps, 'acme', 'pat@partner.test', fx.clock.now());
    const change = await changeOwnerEmail(fx.deps, 'beta', 'new@beta.test', fx.clock.now());
    const ids = [notify.id, `access_request.approval_mail:${access.requestId}`, change.jobs[0]!.id];
    await fx.settle();

    for (const id of ids) {
      const job = await fx.jobs.store.mustGet(id);
      expect(job, id).toMatchObject({ state: 'discarded', discardReason: 'exhausted', attempt: 8 });
      expect(job.attempts.every((a) => /ECONNREFUSED/.test(a.error ?? '')), id).toBe(true);
    }
    for (const kind of ['owner.notify', 'access_request.approval_mail', 'owner.email_confirmation']) {
      expect(fx.metrics.total(DISCARD_METRIC, { kind, reason: 'exhausted' }), kind).toBe(1);
    }
    // "discarded + alert": the alarm's metric, once per exhausted mail.
    expect(fx.metrics.total(DISCARD_ALERT_METRIC)).toBe(3);
  });
});
