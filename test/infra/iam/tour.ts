import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { SentRequests } from '../../../functions/platform/recorder.ts';
import { Driver } from '../../../sim/driver.ts';
import { startSimHost } from '../../../sim/host.ts';
import type { SimHost } from '../../../sim/host.ts';
import type { Plan } from '../../../sim/plan.ts';
import { atRest } from '../../../sim/runner.ts';
import type { ReceivedMail } from '../../../sim/world/smtp.ts';

/**
 * A recorded run for the IAM check: a small campaign on the fault simulation's host (its placer, webhook
 * receivers and SMTP server; the host attributes every request to the deployed function that would make
 * it), then, at rest, a tour of every route the campaign's customer does not use, then rest again. The
 * seeds of the simulation (test/sim/seeds.test.ts) record the same way under faults; this run is the one
 * that reaches every route, a discarded delivery redelivered, jobs waiting on schedules retried and
 * cancelled, and the access-request links.
 */

const contacts = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${String(1000 + i)}`);

/**
 * A tenant with one call at a time (its dials wait for a slot), an owner address (confirmed by the driver,
 * then two access requests), one endpoint for its call results and rounds, one for rounds alone, and six for its batches' ends (more than five: those events fan out), of which one answers
 * 410 Gone (its deliveries are discarded), and
 * three batches: one with a second round more than 15 minutes after the first (a schedule, which the
 * tour retries at once), one deleted while it runs, and one whose calling window opens 17 minutes after
 * the start (its first dial waits on a schedule; the tour cancels it). A second tenant has one endpoint
 * that asks for 90 seconds (429 Retry-After) twice: its delivery holds the endpoint's lease meanwhile, so
 * the results that come in then wait in its list; and the placer refuses one call (its result is written
 * by the dialer).
 */
export const TOUR_PLAN: Plan = {
  seed: 424244,
  campaign: {
    tenants: [
      {
        id: 'acme',
        concurrencyLimit: 1,
        ownerEmail: 'owner@acme.sim.test',
        accessRequests: 2,
        // `rounds` takes the round's event alone, so its lease is free when the calls worker publishes it and
        // the worker hands the delivery on itself (its webhooks UpdateItem and deliveries SendMessage) on any
        // machine: on `calls` alone the round's event raced the last call.completed's delivery for the lease,
        // and under load the worker parked it instead, leaving those two grants unused in 1 run of 3.
        endpoints: [
          { name: 'calls', eventTypes: ['call.completed', 'batch.round_scheduled'] },
          { name: 'rounds', eventTypes: ['batch.round_scheduled'] },
          ...['gone', 'a', 'b', 'c', 'd', 'e'].map((name) => ({ name, eventTypes: ['batch.finalised'] })),
        ],
        batches: [
          { key: 'tour-1', contacts: contacts(2, '+1415555'), maxAttempts: 2, retry: { baseSeconds: 960, capSeconds: 3600 }, createAtMs: 0 },
          { key: 'tour-2', contacts: contacts(2, '+1416555'), maxAttempts: 1, retry: { baseSeconds: 60, capSeconds: 600 }, createAtMs: 60_000, deleteAtMs: 61_000 },
          {
            key: 'tour-3',
            contacts: contacts(1, '+1417555'),
            maxAttempts: 1,
            retry: { baseSeconds: 60, capSeconds: 600 },
            createAtMs: 0,
            callingWindow: { timezone: 'Europe/London', start: '09:17', end: '17:00', weekdays: [1, 2, 3, 4, 5] },
          },
        ],
      },
      {
        id: 'solo',
        concurrencyLimit: 3,
        accessRequests: 0,
        endpoints: [{ name: 'slow' }],
        batches: [{ key: 'solo-1', contacts: contacts(3, '+1418555'), maxAttempts: 1, retry: { baseSeconds: 60, capSeconds: 600 }, createAtMs: 0 }],
      },
    ],
  },
  faults: [
    { id: 1, kind: 'endpoint.gone', endpoint: 'gone', nth: 1, count: 1_000_000 },
    { id: 2, kind: 'endpoint.throttle', endpoint: 'slow', nth: 1, count: 2, retryAfterSeconds: 90 },
    { id: 3, kind: 'placer.refuse', nth: 2 },
  ],
};

/** Moves the clock from timer to timer until the campaign is at rest (sim/runner.ts `atRest`). */
async function toRest(host: SimHost, driver: Driver): Promise<void> {
  const horizon = host.clock.now() + 3 * 86400_000;
  for (;;) {
    await host.quiesce();
    if ((await atRest(host, driver)) === 'rest') return;
    if (host.clock.now() >= horizon || !host.advance()) throw new Error(`the tour's campaign did not come to rest by ${new Date(host.clock.now()).toISOString()}`);
  }
}

/** Runs the plan and the tour; returns every AWS request redial sent, by function. */
export async function recordTour(dynamoEndpoint: string): Promise<SentRequests> {
  const host = await startSimHost({ dynamoEndpoint, plan: TOUR_PLAN, logRequests: true });
  try {
    const mails: ReceivedMail[] = [];
    host.onMail((mail) => mails.push(mail));
    const driver = new Driver(host, TOUR_PLAN.campaign);
    driver.start();
    await host.quiesce();
    // acme's own key, as its customer would hold one (the driver issued it another): for the tenant routes.
    const issued = await call(host, 'POST', '/v1/tenants/acme/keys', undefined, [201]);
    const asAcme = { authorization: `Bearer ${String(issued.body.key)}` };
    await replayARegistration(host, asAcme);
    await handScheduledDials(host);
    await toRest(host, driver);
    await tour(host, driver, mails, asAcme, String(issued.body.keyId));
    await toRest(host, driver);
    return host.sentRequests!.toJSON();
  } finally {
    await host.stop();
  }
}

type Answer = { status: number; body: any };

/** Sends a request to the host's API, expecting one of `expected`, and waits for what it started. */
async function call(host: SimHost, method: string, path: string, body?: unknown, expected: readonly number[] = [200], headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${host.url}${path}`, { method, headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  const parsed = text && response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  if (!expected.includes(response.status)) throw new Error(`the tour's ${method} ${path} got ${response.status}, not ${expected.join(' or ')}: ${text.slice(0, 300)}`);
  await host.quiesce();
  return { status: response.status, body: parsed };
}

/**
 * The registration of an endpoint sent again, as a client whose answer was lost sends it: the secret is
 * shown again, decrypted. Before any delivery: the host runs every function in one process, and a
 * delivery's decryption would fill the cache the API's replay reads first (on AWS each function has its own).
 */
async function replayARegistration(host: SimHost, asAcme: Record<string, string>): Promise<void> {
  const gone = TOUR_PLAN.campaign.tenants[0]!.endpoints.find((e) => e.name === 'gone')!;
  // As the driver sent it (sim/driver.ts): the same body, the same key.
  const body = { url: host.receivers.url(gone.name), ...(gone.eventTypes ? { eventTypes: gone.eventTypes } : {}) };
  const replay = await call(host, 'POST', '/v1/endpoints', body, [200], { 'idempotency-key': 'endpoint-gone', ...asAcme });
  if (typeof replay.body.secret !== 'string' || host.receivers.requests.length > 0) throw new Error(`the tour's replayed registration answered ${JSON.stringify(replay.body)} after ${host.receivers.requests.length} deliveries`);
}

/**
 * Moves the clock until dials wait on schedules, and acts on them from the ops API as an operator would,
 * which deletes each schedule the job no longer needs: the first round of the batch whose window opens
 * later is cancelled, the second round of the first batch retried now (so the run need not wait for them).
 */
async function handScheduledDials(host: SimHost): Promise<void> {
  const { clients, tableNames } = host.observer;
  const done = new Set<string>();
  for (let step = 0; step < 500 && done.size < 2; step++) {
    await host.quiesce();
    // Looked for on the observer's unrecorded client: the tour's own requests are only those a person would send.
    const { Items = [] } = await clients.dynamo.send(
      new ScanCommand({ TableName: tableNames.jobs, ConsistentRead: true, FilterExpression: '#kind = :dial', ExpressionAttributeNames: { '#kind': 'kind' }, ExpressionAttributeValues: { ':dial': 'calls.dial' } }),
    );
    for (const job of Items) {
      const waitsOnSchedule = typeof job['scheduledAt'] === 'string' && Date.parse(job['scheduledAt']) - host.clock.now() > 15 * 60_000 && job['state'] !== 'running';
      const id = String(job['id']);
      if (!waitsOnSchedule || done.has(id)) continue;
      const round = Number(job['args'] && (job['args'] as { round?: number }).round);
      await call(host, 'POST', `/v1/ops/jobs/${encodeURIComponent(id)}/${round > 1 ? 'retry' : 'cancel'}`);
      done.add(id);
    }
    if (done.size < 2 && !host.advance()) break;
  }
  if (done.size < 2) throw new Error(`the tour campaign's dials waited on ${done.size} schedules, not 2`);
}

/** Every route the driver does not call, each once, each answered as it should be (a tour that silently failed would record less). */
async function tour(host: SimHost, driver: Driver, mails: readonly ReceivedMail[], asAcme: Record<string, string>, keyId: string): Promise<void> {
  const request = (method: string, path: string, body?: unknown, expected?: readonly number[], headers?: Record<string, string>) => call(host, method, path, body, expected, headers);
  const asTenant = (method: string, path: string, body?: unknown, expected?: readonly number[]) => call(host, method, path, body, expected, asAcme);
  const batch = driver.batches.get('tour-1');
  if (!batch) throw new Error('the tour campaign created no batch');

  // Public: the health check, the confirmation link's page (already used), the access-request links.
  await request('GET', '/healthz');
  const confirmation = linkIn(mails, 'owner.email_confirmation', /\/v1\/tenants\/[^/\s]+\/confirm-email\?token=[A-Za-z0-9_%.~-]+/);
  await request('GET', confirmation, undefined, [200, 404, 409, 410]);
  const approvals = mails.filter((m) => m.kind === 'access_request.approval_mail');
  if (approvals.length < 2) throw new Error(`the tour expected two access-request mails, got ${approvals.length}`);
  const [first, second] = approvals.map((m) => ({
    approve: match(m.text, /\/v1\/tenants\/[^/\s]+\/access-requests\/[^/\s]+\/approve\?token=[A-Za-z0-9_%.~-]+/),
    deny: match(m.text, /\/v1\/tenants\/[^/\s]+\/access-requests\/[^/\s]+\/deny\?token=[A-Za-z0-9_%.~-]+/),
  })) as [{ approve: string; deny: string }, { approve: string; deny: string }];
  await request('GET', first.approve);
  await request('POST', first.approve);
  await request('GET', second.deny);
  await request('POST', second.deny);
  await request('GET', first.approve.replace(/\/approve\?.*$/, ''));

  // The tenant, its batches and what they came to: as the tenant (its key), and as an operator (the copies).
  await asTenant('GET', '/v1/tenants/acme');
  await request('GET', '/v1/tenants/acme/owner-email');
  await request('GET', '/v1/tenants/acme/notices');
  await request('GET', '/v1/tenants/acme/keys');
  await asTenant('GET', '/v1/batches?limit=10');
  await asTenant('GET', `/v1/batches/${batch.batchId}`);
  await asTenant('GET', `/v1/batches/${batch.batchId}/contacts`);
  await asTenant('GET', `/v1/batches/${batch.batchId}/rounds`);
  await request('GET', '/v1/ops/batches?limit=10');
  await request('GET', '/v1/ops/tenants/acme');
  await request('GET', '/v1/ops/tenants/acme/batches?limit=10');
  await request('GET', `/v1/ops/tenants/acme/batches/${batch.batchId}`);
  await request('GET', `/v1/ops/tenants/acme/batches/${batch.batchId}/contacts`);
  await request('GET', `/v1/ops/tenants/acme/batches/${batch.batchId}/rounds`);

  // The suppression list: numbers put, listed and removed, as the tenant and as an operator (the audit records stay).
  const suppressed = (n: string) => encodeURIComponent(n);
  await asTenant('PUT', `/v1/suppressions/${suppressed('+14155550199')}`, { reason: 'the tour' }, [200]);
  await request('PUT', `/v1/ops/tenants/acme/suppressions/${suppressed('+14155550198')}`, {}, [200]);
  await asTenant('GET', '/v1/suppressions?limit=10');
  await request('GET', '/v1/ops/tenants/acme/suppressions?limit=10');
  await asTenant('DELETE', `/v1/suppressions/${suppressed('+14155550199')}`, undefined, [200]);
  await request('DELETE', `/v1/ops/tenants/acme/suppressions/${suppressed('+14155550198')}`, undefined, [200]);
  // A suppression CSV uploaded and imported: checked by the tenant API, written by its job on the calls queue.
  const upload = (await asTenant('POST', '/v1/uploads', undefined, [201])).body as { uploadId: string; url: string };
  const put = await fetch(upload.url, { method: 'PUT', body: 'number,reason\n+14155550197,the tour\n' });
  if (put.status !== 200) throw new Error(`the tour's upload was refused: ${put.status}`);
  const imported = (await asTenant('POST', '/v1/suppressions/imports', { uploadId: upload.uploadId }, [202])).body as { importId: string };
  await asTenant('GET', `/v1/suppressions/imports/${imported.importId}`, undefined, [200]);

  // Endpoints: listed, shown, their deliveries; the gone one's discarded deliveries run again, and it is enabled again.
  const endpoints = (await asTenant('GET', '/v1/endpoints?limit=20')).body.endpoints as { endpointId: string; url: string; disabled?: boolean }[];
  const gone = endpoints.find((e) => e.url.endsWith('/e/gone'));
  if (!gone) throw new Error('the tour found no endpoint /e/gone');
  await asTenant('GET', `/v1/endpoints/${gone.endpointId}`);
  await asTenant('GET', `/v1/endpoints/${gone.endpointId}/deliveries`);
  await request('GET', '/v1/ops/endpoints?limit=20');
  await request('GET', '/v1/ops/tenants/acme/endpoints?limit=20');
  await request('GET', `/v1/ops/tenants/acme/endpoints/${gone.endpointId}`);
  await request('GET', `/v1/ops/tenants/acme/endpoints/${gone.endpointId}/deliveries`);
  await asTenant('POST', `/v1/endpoints/${gone.endpointId}/enable`, undefined, [200]);
  const redelivered = await asTenant('POST', `/v1/endpoints/${gone.endpointId}/redeliver`);
  if (!(Number(redelivered.body.requeued) > 0)) throw new Error(`the tour's redeliver ran nothing: ${JSON.stringify(redelivered.body)}`);
  await request('POST', `/v1/ops/tenants/acme/endpoints/${gone.endpointId}/enable`, undefined, [200]);
  await request('POST', `/v1/ops/tenants/acme/endpoints/${gone.endpointId}/redeliver`);
  // Its attempt log, and a recovery of everything it missed (dry, then for real: the gone endpoint answers
  // 410 again and is disabled again, which nothing after this needs).
  await asTenant('GET', `/v1/endpoints/${gone.endpointId}/attempts?limit=50`);
  await request('GET', `/v1/ops/tenants/acme/endpoints/${gone.endpointId}/attempts?status=gone&limit=50`);
  await request('POST', `/v1/ops/tenants/acme/endpoints/${gone.endpointId}/enable`, undefined, [200]);
  const since = new Date(host.clock.now() - 29 * 86400_000).toISOString();
  const dry = (await request('POST', `/v1/ops/tenants/acme/endpoints/${gone.endpointId}/recover`, { since, dryRun: true }, [202])).body as { recoveryId: string };
  const counted = (await request('GET', `/v1/ops/tenants/acme/endpoints/${gone.endpointId}/recoveries/${dry.recoveryId}`)).body;
  const recovery = (await asTenant('POST', `/v1/endpoints/${gone.endpointId}/recover`, { since }, [202])).body as { recoveryId: string };
  const recovered = (await asTenant('GET', `/v1/endpoints/${gone.endpointId}/recoveries/${recovery.recoveryId}`)).body;
  if (!(Number(counted.matched) > 0 && Number(recovered.requeued) > 0)) throw new Error(`the tour's recovery requeued nothing: ${JSON.stringify({ counted, recovered })}`);
  // Managed: one changed (its URL, so its held deliveries are released), one's secret rotated, two deleted
  // (their purge runs at the rest that follows); as the tenant and as an operator.
  const named = (name: string) => {
    const found = endpoints.find((e) => e.url.endsWith(`/e/${name}`));
    if (!found) throw new Error(`the tour found no endpoint /e/${name}`);
    return found.endpointId;
  };
  await asTenant('PATCH', `/v1/endpoints/${named('c')}`, { url: host.receivers.url('c'), description: 'the tour changed it' }, [200]);
  await request('PATCH', `/v1/ops/tenants/acme/endpoints/${named('c')}`, { eventTypes: ['batch.finalised', 'endpoint.disabled'] }, [200]);
  await asTenant('POST', `/v1/endpoints/${named('b')}/rotate-secret`, {}, [200]);
  await request('POST', `/v1/ops/tenants/acme/endpoints/${named('b')}/rotate-secret`, { expireOldNow: true }, [200]);
  await asTenant('DELETE', `/v1/endpoints/${named('e')}`, undefined, [202]);
  await request('DELETE', `/v1/ops/tenants/acme/endpoints/${named('d')}`, undefined, [202]);
  // An operator registers an endpoint for the tenant, and sends it again as a client whose answer was lost.
  const registration = { url: host.receivers.url('calls'), eventTypes: ['batch.finalised'] };
  await request('POST', '/v1/ops/tenants/acme/endpoints', registration, [201], { 'idempotency-key': 'tour-operator-endpoint' });
  await request('POST', '/v1/ops/tenants/acme/endpoints', registration, [200], { 'idempotency-key': 'tour-operator-endpoint' });
  // Calendars (functions/calendar/settings-api.ts): put with credentials (sealed), shown, listed; a batch
  // booking into one keeps it from being deleted until the batch is gone; as the tenant and as an operator.
  const calendar = { provider: 'google', timezone: 'Europe/London', bookableHours: { mon: [['09:00', '17:00']] }, credentials: { clientId: 'tour', clientSecret: 'tour-secret', refreshToken: 'tour-refresh' } };
  await asTenant('PUT', '/v1/calendars/tour', calendar, [200]);
  await request('PUT', '/v1/ops/tenants/acme/calendars/tour-ops', calendar, [200]);
  await asTenant('PUT', '/v1/calendars/tour', { ...calendar, credentials: undefined, timezone: 'Europe/Dublin' }, [200]);
  await asTenant('GET', '/v1/calendars/tour');
  await asTenant('GET', '/v1/calendars?limit=10');
  await request('GET', '/v1/ops/tenants/acme/calendars/tour-ops');
  await request('GET', '/v1/ops/tenants/acme/calendars?limit=10');
  const booking = (await asTenant('POST', '/v1/batches', { contacts: [{ number: '+14195550100' }], maxAttempts: 1, appointments: { calendarId: 'tour', durationMinutes: 30 } }, [201])).body as { batchId: string };
  await asTenant('DELETE', '/v1/calendars/tour', undefined, [409]);
  await asTenant('DELETE', `/v1/batches/${booking.batchId}`, undefined, [200]);
  await asTenant('DELETE', '/v1/calendars/tour', undefined, [200]);
  await request('DELETE', '/v1/ops/tenants/acme/calendars/tour-ops', undefined, [200]);
  await request('DELETE', `/v1/tenants/acme/keys/${keyId}`, undefined, [200, 204]);

  // Ops: the tables a reader of the runbook uses, a discarded job retried, a probe retried and another cancelled.
  await request('GET', '/v1/openapi.json');
  await request('GET', '/v1/ops/policies');
  await request('GET', '/v1/ops/periodic');
  await request('GET', '/v1/ops/job-counts');
  const discarded = (await request('GET', '/v1/ops/jobs?state=discarded&limit=10')).body.jobs as { id: string }[];
  if (discarded.length === 0) throw new Error('the tour found no discarded job');
  await request('GET', `/v1/ops/jobs/${encodeURIComponent(discarded[0]!.id)}`);
  await request('POST', `/v1/ops/jobs/${encodeURIComponent(discarded[0]!.id)}/retry`);
  await request('POST', '/v1/ops/jobs/retry', { state: 'discarded', dryRun: true });
  const probe = (await request('POST', '/v1/ops/probes', { failTimes: 1, note: 'the IAM tour' }, [201])).body as { jobId: string };
  // It failed once and waits for its second attempt: retried now.
  await request('GET', '/v1/ops/jobs?state=retryable&limit=10');
  await request('GET', `/v1/ops/jobs/${encodeURIComponent(probe.jobId)}`);
  await request('POST', `/v1/ops/jobs/${encodeURIComponent(probe.jobId)}/retry`, undefined, [200, 409]);
  const again = (await request('POST', '/v1/ops/probes', { failTimes: 0 }, [201])).body as { jobId: string };
  await request('POST', `/v1/ops/jobs/${encodeURIComponent(again.jobId)}/cancel`, undefined, [200, 409]);
}

function match(text: string, pattern: RegExp): string {
  const found = pattern.exec(text)?.[0];
  if (!found) throw new Error(`no link ${pattern} in a mail`);
  return found;
}

const linkIn = (mails: readonly ReceivedMail[], kind: string, pattern: RegExp): string => {
  const mail = mails.find((m) => m.kind === kind);
  if (!mail) throw new Error(`the tour expected a ${kind} mail`);
  return match(mail.text, pattern);
};
