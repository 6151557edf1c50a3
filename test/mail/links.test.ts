import { afterEach, describe, expect, it } from 'vitest';
import { createApiHandler } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { ApiHandler, LocalHttpServer } from '../../functions/platform/local/http-server.ts';
import { requestAccess } from '../../functions/mail/access.ts';
import { changeOwnerEmail, prepareOwnerEmailChange } from '../../functions/mail/owner.ts';
import { mailRoutes } from '../../functions/mail/routes.ts';
import { TOKEN_TTL_MS } from '../../functions/mail/tokens.ts';
import { linkIn, mailFixture } from '../support/mail.ts';
import type { MailFixture } from '../support/mail.ts';

let fx: MailFixture | undefined;
let server: LocalHttpServer | undefined;
afterEach(async () => {
  await server?.close();
  await fx?.stop();
  fx = undefined;
  server = undefined;
});

/** The mail routes on a real HTTP server, mails linking back to it. */
async function setup() {
  const late: { api?: ApiHandler } = {};
  const started = await startHttpServer({ port: 0, handler: (event, context) => late.api!(event, context) });
  server = started;
  fx = await mailFixture({ publicBaseUrl: started.url });
  const f = fx;
  late.api = createApiHandler(mailRoutes(() => f.deps), f.logger);
  return { f, url: started.url };
}

async function get(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers });
  const text = await response.text();
  return { status: response.status, text, body: response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined };
}

/** Uses a mailed link: what its page's button does (POST the same URL). */
async function use(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: 'POST', headers });
  const text = await response.text();
  return { status: response.status, text, body: response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined };
}

async function post(url: string, body: unknown) {
  const response = await fetch(url, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return { status: response.status, body: (await response.json()) as any };
}

describe('the confirmation link', () => {
  it('OpeningTheLinkChangesNothingItShowsAButtonThatPostsIt', async () => {
    const { f } = await setup();
    await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    await f.settle();
    const link = linkIn(f.sink.messages()[0]!, '/confirm-email');
    // A mail scanner fetches the link, as a browser would, several times.
    for (let i = 0; i < 3; i++) {
      const page = await get(link, { accept: 'text/html' });
      expect(page.status).toBe(200);
      expect(page.text).toContain('<form method="post" action="/v1/tenants/acme/confirm-email?token=');
    }
    expect((await get(link)).body).toMatchObject({ method: 'POST', url: expect.stringContaining('/v1/tenants/acme/confirm-email?token=') });
    expect((await f.store.getContact('acme'))?.confirmedAt).toBeUndefined();
    expect((await use(link)).status).toBe(200);
    expect((await f.store.getContact('acme'))?.confirmedAt).toBeDefined();
  });

  it('ConfirmsThePendingAddressOnceAndRefusesTheSecondUse', async () => {
    const { f, url } = await setup();
    const change = await changeOwnerEmail(f.deps, 'acme', 'Owner@acme.test', f.clock.now());
    expect(change.status).toBe('pending');
    await f.settle();
    const [mail] = f.sink.messages();
    expect(mail!.envelope.to).toEqual(['Owner@acme.test']);
    expect(mail!.messageId).toBe(`<owner.email_confirmation.${change.confirmationId}@test.redial>`);
    const link = linkIn(mail!, '/confirm-email');
    expect(link.startsWith(`${url}/v1/tenants/acme/confirm-email?token=`)).toBe(true);
    expect((await f.store.getContact('acme'))?.pendingMailedAt).toBeDefined();

    f.clock.advance(60_000);
    const first = await use(link);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'confirmed', tenantId: 'acme', email: 'Owner@acme.test', confirmedAt: new Date(f.clock.now()).toISOString(), pending: null });
    const confirmed = await f.store.getContact('acme');

    f.clock.advance(60_000);
    const second = await use(link);
    expect(second.status).toBe(410);
    expect(second.body).toEqual({ error: 'link_refused', reason: 'used', message: expect.stringMatching(/used already/) });
    expect(await f.store.getContact('acme')).toEqual(confirmed);
    // The stored state never holds the token itself.
    expect(JSON.stringify(confirmed)).not.toContain(new URL(link).searchParams.get('token'));
  });

  it('ChangesStateExactlyOnceUnderConcurrentClicks', async () => {
    const { f } = await setup();
    await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    await f.settle();
    const link = linkIn(f.sink.messages()[0]!, '/confirm-email');
    const answers = await Promise.all(Array.from({ length: 8 }, () => use(link)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 410, 410, 410, 410, 410, 410, 410]);
  });

  it('RefusesAnExpiredLinkAndChangesNothing', async () => {
    const { f } = await setup();
    await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    await f.settle();
    const link = linkIn(f.sink.messages()[0]!, '/confirm-email');
    const before = await f.store.getContact('acme');
    f.clock.set(Date.parse(before!.pendingExpiresAt!));
    const answer = await use(link);
    expect(answer.status).toBe(410);
    expect(answer.body.reason).toBe('expired');
    expect(await f.store.getContact('acme')).toEqual(before);
    // One millisecond earlier it would have worked: the expiry is exact.
    expect(Date.parse(before!.pendingExpiresAt!) - Date.parse(before!.pendingRequestedAt!)).toBe(TOKEN_TTL_MS.emailConfirmation);
  });

  it('RefusesForgedMalformedAndOtherTenantsTokensAndChangesNothing', async () => {
    const { f, url } = await setup();
    await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    await changeOwnerEmail(f.deps, 'globex', 'boss@globex.test', f.clock.now());
    await f.settle();
    const acmeLink = linkIn(f.sink.messages().find((m) => m.envelope.to[0] === 'owner@acme.test')!, '/confirm-email');
    const token = new URL(acmeLink).searchParams.get('token')!;
    const before = [await f.store.getContact('acme'), await f.store.getContact('globex')];
    const forged = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of [forged, 'short', '', `${token}x`, "' OR 1=1 --"]) {
      const answer = await use(`${url}/v1/tenants/acme/confirm-email?token=${encodeURIComponent(bad)}`);
      expect(answer.status, bad).toBe(410);
      expect(answer.body.reason, bad).toBe('invalid');
    }
    expect((await use(`${url}/v1/tenants/globex/confirm-email?token=${token}`)).status).toBe(410);
    expect((await use(`${url}/v1/tenants/nobody/confirm-email?token=${token}`)).status).toBe(410);
    expect((await use(`${url}/v1/tenants/acme/confirm-email`)).status).toBe(400);
    expect([await f.store.getContact('acme'), await f.store.getContact('globex')]).toEqual(before);
  });

  it('StopsWorkingWhenANewerChangeSupersedesIt', async () => {
    const { f } = await setup();
    await changeOwnerEmail(f.deps, 'acme', 'first@acme.test', f.clock.now());
    await f.settle();
    f.clock.advance(1000);
    await changeOwnerEmail(f.deps, 'acme', 'second@acme.test', f.clock.now());
    await f.settle();
    const [firstMail, secondMail] = f.sink.messages();
    expect((await use(linkIn(firstMail!, '/confirm-email'))).body.reason).toBe('invalid');
    expect((await use(linkIn(secondMail!, '/confirm-email'))).body).toMatchObject({ email: 'second@acme.test' });
  });

  it('AnswersABrowserWithAPage', async () => {
    const { f } = await setup();
    await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    await f.settle();
    const link = linkIn(f.sink.messages()[0]!, '/confirm-email');
    const page = await use(link, { accept: 'text/html,application/xhtml+xml' });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<h1 style="font-size: 1.4rem;">Address confirmed</h1>');
    const again = await use(link, { accept: 'text/html' });
    expect(again.status).toBe(410);
    expect(again.text).toContain('This link does not work');
  });
});

describe('an owner address change', () => {
  it('IsPreparedForTheCallersTransactionAndWritesNothingUntilCommitted', async () => {
    const { f } = await setup();
    const change = await prepareOwnerEmailChange(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    expect(change.items).toHaveLength(2);
    expect(change.jobs).toHaveLength(1);
    expect(await f.store.getContact('acme')).toBeUndefined();
    expect(await f.jobs.client.get(change.jobs[0]!.id)).toBeUndefined();
    await f.commitOnly(change.items);
    await f.jobs.client.afterCommit(change.jobs);
    await f.settle();
    expect(f.sink.messages()).toHaveLength(1);
    expect(await f.store.getContact('acme')).toMatchObject({ pendingEmail: 'owner@acme.test' });
  });

  it('ToTheConfirmedAddressAgainIsNoChangeAndMailsNothing', async () => {
    const { f } = await setup();
    await f.store.putConfirmedContact('acme', 'owner@acme.test', f.clock.now());
    expect(await prepareOwnerEmailChange(f.deps, 'acme', 'OWNER@acme.test', f.clock.now())).toEqual({ status: 'unchanged', items: [], jobs: [], confirmationId: undefined });
  });

  it('ToTheAddressAlreadyPendingKeepsItsConfirmationSoTheMailedLinkStillWorks', async () => {
    const { f } = await setup();
    const first = await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    await f.settle();
    const link = linkIn(f.sink.messages()[0]!, '/confirm-email');
    // The client sends its PUT again (its first answer was lost): nothing new is written or mailed.
    f.clock.advance(60_000);
    const again = await prepareOwnerEmailChange(f.deps, 'acme', 'Owner@acme.test', f.clock.now());
    expect(again).toEqual({ status: 'pending', items: [], jobs: [], confirmationId: first.confirmationId });
    await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    await f.settle();
    expect(f.sink.messages()).toHaveLength(1);
    expect((await use(link)).body).toMatchObject({ status: 'confirmed', email: 'owner@acme.test' });
  });

  it('ToTheAddressPendingAfterItsLinkExpiredMailsANewLink', async () => {
    const { f } = await setup();
    await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    await f.settle();
    f.clock.advance(TOKEN_TTL_MS.emailConfirmation);
    const again = await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    expect(again.items).toHaveLength(2);
    await f.settle();
    expect(f.sink.messages()).toHaveLength(2);
    expect((await use(linkIn(f.sink.messages()[1]!, '/confirm-email'))).body).toMatchObject({ status: 'confirmed' });
  });

  it('RefusesAnInvalidAddress', async () => {
    const { f } = await setup();
    await expect(prepareOwnerEmailChange(f.deps, 'acme', 'not an address', f.clock.now())).rejects.toThrow();
    expect(await f.store.getContact('acme')).toBeUndefined();
  });

  it('KeepsNotifyingTheConfirmedAddressUntilTheNewOneIsConfirmed', async () => {
    const { f } = await setup();
    await f.store.putConfirmedContact('acme', 'old@acme.test', f.clock.now());
    await changeOwnerEmail(f.deps, 'acme', 'new@acme.test', f.clock.now());
    await f.notify('acme', 'evt_during_change');
    await f.settle();
    const notice = f.sink.messages().find((m) => m.messageId === '<evt_during_change@test.redial>');
    expect(notice!.envelope.to).toEqual(['old@acme.test']);
  });
});

describe('access requests', () => {
  it('MailTheOwnerApproveAndDenyLinksOfWhichTheFirstUsedDecidesOnce', async () => {
    const { f, url } = await setup();
    await f.store.putConfirmedContact('acme', 'owner@acme.test', f.clock.now());
    const created = await post(`${url}/v1/tenants/acme/access-requests`, { email: 'pat@partner.test' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ tenantId: 'acme', email: 'pat@partner.test', status: 'pending', mailedAt: null });
    await f.settle();
    const [mail] = f.sink.messages();
    expect(mail!.envelope.to).toEqual(['owner@acme.test']);
    expect(mail!.messageId).toBe(`<access_request.${created.body.requestId}@test.redial>`);
    const approve = linkIn(mail!, '/approve');
    const deny = linkIn(mail!, '/deny');

    const approved = await use(approve);
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ requestId: created.body.requestId, status: 'approved', resolvedAt: new Date(f.clock.now()).toISOString() });
    expect((await use(approve)).body).toMatchObject({ error: 'link_refused', reason: 'used' });
    expect((await use(deny)).body).toMatchObject({ error: 'link_refused', reason: 'used', message: 'this request was approved already' });
    const shown = await get(`${url}/v1/tenants/acme/access-requests/${created.body.requestId}`);
    expect(shown.body).toMatchObject({ status: 'approved' });
    expect(shown.body.mailedAt).not.toBeNull();
  });

  it('ResolveExactlyOnceWhenApproveAndDenyRace', async () => {
    const { f, url } = await setup();
    await f.store.putConfirmedContact('acme', 'owner@acme.test', f.clock.now());
    await post(`${url}/v1/tenants/acme/access-requests`, { email: 'pat@partner.test' });
    await f.settle();
    const mail = f.sink.messages()[0]!;
    const answers = await Promise.all([use(linkIn(mail, '/approve')), use(linkIn(mail, '/deny')), use(linkIn(mail, '/approve')), use(linkIn(mail, '/deny'))]);
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 410)).toHaveLength(3);
  });

  it('RefuseAnExpiredOrForgedLinkAndChangeNothing', async () => {
    const { f, url } = await setup();
    await f.store.putConfirmedContact('acme', 'owner@acme.test', f.clock.now());
    const created = await post(`${url}/v1/tenants/acme/access-requests`, { email: 'pat@partner.test' });
    await f.settle();
    const approve = linkIn(f.sink.messages()[0]!, '/approve');
    const forged = approve.replace(/token=.*/, `token=${'x'.repeat(43)}`);
    expect((await use(forged)).body).toMatchObject({ reason: 'invalid' });
    f.clock.advance(TOKEN_TTL_MS.accessRequest);
    expect((await use(approve)).body).toMatchObject({ reason: 'expired' });
    expect((await get(`${url}/v1/tenants/acme/access-requests/${created.body.requestId}`)).body).toMatchObject({ status: 'expired', resolvedAt: null });
  });

  it('AnswerASecondRequestFromTheSameAddressWithTheOpenOneAndMailNothingMore', async () => {
    const { f, url } = await setup();
    await f.store.putConfirmedContact('acme', 'owner@acme.test', f.clock.now());
    const first = await post(`${url}/v1/tenants/acme/access-requests`, { email: 'pat@partner.test' });
    const second = await post(`${url}/v1/tenants/acme/access-requests`, { email: 'PAT@partner.test' });
    expect(second.status).toBe(200);
    expect(second.body.requestId).toBe(first.body.requestId);
    await f.settle();
    expect(f.sink.messages()).toHaveLength(1);
    // Once the first request's links have expired, the address may ask again.
    f.clock.advance(TOKEN_TTL_MS.accessRequest);
    const third = await post(`${url}/v1/tenants/acme/access-requests`, { email: 'pat@partner.test' });
    expect(third.status).toBe(201);
    expect(third.body.requestId).not.toBe(first.body.requestId);
  });

  it('AreRefusedWithoutAConfirmedOwnerOrWithBadInputAndWriteNothing', async () => {
    const { f, url } = await setup();
    const noOwner = await post(`${url}/v1/tenants/acme/access-requests`, { email: 'pat@partner.test' });
    expect(noOwner.status).toBe(409);
    expect(noOwner.body).toMatchObject({ reason: 'no_confirmed_owner' });
    await f.store.putConfirmedContact('acme', 'owner@acme.test', f.clock.now());
    const bad = await post(`${url}/v1/tenants/acme/access-requests`, { email: 'not-an-address' });
    expect(bad.status).toBe(400);
    expect(bad.body.issues.map((i: { path: string }) => i.path)).toEqual(['body.email']);
    const badTenant = await post(`${url}/v1/tenants/a%23b/access-requests`, { email: 'pat@partner.test' });
    expect(badTenant.status).toBe(400);
    expect(badTenant.body.issues[0].path).toBe('path.tenantId');
    expect((await f.jobs.client.list({})).jobs).toEqual([]);
    const { Items } = await f.clients.dynamo.send(new (await import('@aws-sdk/lib-dynamodb')).ScanCommand({ TableName: f.tableNames.mail }));
    expect(Items!.map((i) => i['sk'])).toEqual(['OWNER']);
  });
});

describe('where a raw link token is kept', () => {
  /** Every item of the jobs table and of the mail table, as text (a scan: tests only). */
  async function everything(f: MailFixture) {
    const { ScanCommand } = await import('@aws-sdk/lib-dynamodb');
    const scan = async (table: string) => JSON.stringify((await f.clients.dynamo.send(new ScanCommand({ TableName: table, ConsistentRead: true }))).Items ?? []);
    return { jobs: await scan(f.tableNames.jobs), mail: await scan(f.tableNames.mail) };
  }

  it('NeverInAJobRow_AndInTheMailTableOnlyUntilItsMailIsSent', async () => {
    const { f } = await setup();
    await f.store.putConfirmedContact('beta', 'owner@beta.test', f.clock.now());
    await changeOwnerEmail(f.deps, 'acme', 'owner@acme.test', f.clock.now());
    const access = await requestAccess(f.deps, 'beta', 'pat@partner.test', f.clock.now());
    await f.settle();

    const confirmLink = linkIn(f.sink.messages().find((m) => m.envelope.to[0] === 'owner@acme.test')!, '/confirm-email');
    const approveLink = linkIn(f.sink.messages().find((m) => m.envelope.to[0] === 'owner@beta.test')!, '/approve');
    const tokens = [new URL(confirmLink).searchParams.get('token')!, new URL(approveLink).searchParams.get('token')!];
    const stored = await everything(f);
    for (const token of tokens) {
      expect(stored.jobs).not.toContain(token);
      expect(stored.mail).not.toContain(token);
    }
    // The links work: the tokens are the real ones.
    expect((await use(confirmLink)).status).toBe(200);
    expect((await use(approveLink)).body).toMatchObject({ requestId: access.requestId, status: 'approved' });
  });
});
