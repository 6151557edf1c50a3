import { callsDeps } from '../../calls/deps.ts';
import type { AppointmentCalendars, CallsDeps, CallsPorts } from '../../calls/module.ts';
import { CallsStore } from '../../calls/store.ts';
import { prepareBatchFinalisedNotice, prepareOwnerEmailChange } from '../../mail/owner.ts';
import { MailStore } from '../../mail/store.ts';
import type { Publisher } from '../../webhooks/publish.ts';
import type { SystemHost } from '../host.ts';

/**
 * The calls context over a host, its ports wired: events through the webhooks context's publisher
 * (`publisher`, asked for on the first event), the owner's mail through the mail context's owner functions
 * over its store (no transport: calls only prepares mail jobs), a batch's calendar through `calendars`
 * (functions/app/contexts/calendar-links.ts; a function that creates no batch leaves it out).
 */
export function buildCalls(host: SystemHost, publisher: () => Publisher, calendars?: AppointmentCalendars): CallsDeps {
  if (!host.calls) throw new Error('this host has no calls configuration');
  let mailStore: MailStore | undefined;
  const ports: CallsPorts = {
    events: {
      prepare: async (input, now) => {
        const published = await publisher().prepare(input, now);
        return { eventId: published.event.id, items: published.items, jobs: [], afterCommit: () => published.afterCommit(), abandon: () => published.abandon() };
      },
    },
    ownerMail: {
      batchFinalised: (input) => {
        const job = prepareBatchFinalisedNotice(host.jobs.client, input);
        return { items: [job.item], jobs: [job] };
      },
      ownerEmailChanged: async ({ tenantId, ownerEmail, now }) => {
        const store = (mailStore ??= new MailStore(host.db, host.tableNames.mail));
        const { items, jobs } = await prepareOwnerEmailChange({ store, jobs: host.jobs.client }, tenantId, ownerEmail, now);
        return { items, jobs };
      },
    },
    ...(calendars ? { calendars } : {}),
  };
  return callsDeps({
    store: host.callsStore ?? new CallsStore(host.db, host.tableNames.calls),
    jobs: host.jobs.client,
    ports,
    clock: host.clock,
    ...(host.wallClock ? { wallClock: host.wallClock } : {}),
    rng: host.rng,
    logger: host.logger,
    config: host.calls,
    ...(host.uploads ? { uploads: host.uploads } : {}),
  });
}

