import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { changeOwnerEmail } from '../../functions/mail/owner.ts';
import { startTestRuntime } from '../support/local-runtime.ts';

const refuses = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(true));
  });

async function json(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url);
  return { status: response.status, body: await response.json() };
}

async function jsonPost(url: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: 'POST' });
  return { status: response.status, body: await response.json() };
}

// Generous: its start and its mail's round trips take several times longer on a loaded 2-core machine.
const LOADED_MACHINE_MS = 120_000;

describe('the local runtime', () => {
  it('SendsMailToItsSmtpSinkShowsItOnTheOpsRouteLinksToItselfAndStopsTheSinkWithEverythingElse', { timeout: LOADED_MACHINE_MS }, async () => {
    const runtime = await startTestRuntime({ port: 0, timeScale: 1, rescueIntervalMs: 60_000 });
    const smtpPort = runtime.smtpSink!.port;
    const apiPort = Number(new URL(runtime.url).port);
    try {
      expect(runtime.mail).toMatchObject({ domain: 'redial.local', publicBaseUrl: runtime.url, transport: { type: 'smtp', url: runtime.smtpSink!.url } });
      // The call placer is told the same public base to post results to.
      expect(runtime.calls.callbackUrl).toBe(`${runtime.url}/v1/calls/webhook`);
      await changeOwnerEmail(runtime.system.mail, 'acme', 'owner@acme.test', runtime.clock.now());

      let listed: { status: number; body: any } | undefined;
      const deadline = Date.now() + 15_000;
      do {
        await new Promise((r) => setTimeout(r, 50));
        listed = await json(`${runtime.url}/v1/ops/mail?to=owner@acme.test`);
      } while (listed.body.messages.length === 0 && Date.now() < deadline);
      expect(listed.status).toBe(200);
      const [message] = listed.body.messages;
      expect(message).toMatchObject({ kind: 'owner.email_confirmation', to: 'owner@acme.test', messageId: expect.stringMatching(/^<owner\.email_confirmation\.conf_[0-9a-f]{32}@redial\.local>$/) });

      const link = (message.text as string).match(/http:\/\/127\.0\.0\.1:\d+\/v1\/tenants\/acme\/confirm-email\?token=[A-Za-z0-9_-]{43}/)?.[0];
      expect(link).toBeDefined();
      expect((await json(link!)).body).toMatchObject({ method: 'POST' }); // opening the link changes nothing
      expect((await fetch(link!, { method: 'POST' })).status).toBe(200);
      const again = await jsonPost(link!);
      expect(again.status).toBe(410);
      expect(again.body.reason).toBe('used');
      expect((await json(`${runtime.url}/v1/tenants/acme/owner-email`)).body).toMatchObject({ email: 'owner@acme.test', pending: null });

      // The tenant API asks a new owner address to confirm itself, in the tenant's own transaction.
      const put = await fetch(`${runtime.url}/v1/tenants/acme2`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ concurrencyLimit: 2, ownerEmail: 'boss@acme2.test' }) });
      expect(put.status).toBe(200);
      let forBoss: { status: number; body: any } | undefined;
      const bossDeadline = Date.now() + 15_000;
      do {
        await new Promise((r) => setTimeout(r, 50));
        forBoss = await json(`${runtime.url}/v1/ops/mail?to=boss@acme2.test`);
      } while (forBoss.body.messages.length === 0 && Date.now() < bossDeadline);
      expect(forBoss.body.messages.map((m: any) => m.kind)).toEqual(['owner.email_confirmation']);
      expect((await json(`${runtime.url}/v1/tenants/acme2/owner-email`)).body.pending).toMatchObject({ email: 'boss@acme2.test' });

      const raw = await fetch(`${runtime.url}/v1/ops/mail/${message.id}/raw`);
      expect(raw.headers.get('content-type')).toBe('message/rfc822');
      const unfolded = (await raw.text()).replace(/\r\n[ \t]+/g, ' ');
      expect(unfolded).toContain(`Message-ID: ${message.messageId}\r\n`);
    } finally {
      await runtime.stop();
    }
    expect(await refuses(smtpPort)).toBe(true);
    expect(await refuses(apiPort)).toBe(true);
  });
});
