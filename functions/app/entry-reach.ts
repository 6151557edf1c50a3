/**
 * Which functions/ folders each Lambda entry (functions/app/lambda/<file>) may reach through the code it
 * imports at run time: its bundle holds what its function runs and nothing else (docs/architecture.md,
 * "Bundles"). The structure gate checks it (`npm run gate`, rule `entry-reach`); functions/app itself and
 * what the catalog (./catalog.ts: the tables, queues and kinds, as data) imports are allowed to every entry.
 * Data only: no entry imports this file.
 *
 * Why each reaches what it does: the calls context completes calls and publishes their events (webhooks'
 * publisher) and tells the owner about finalised batches (mail's owner notice); the webhooks context tells
 * the owner about disabled endpoints (mail); the calendar context publishes appointment events (webhooks'
 * publisher); the APIs hold every context's routes (never a job's code); the
 * public links hold the mail context's links and serve docs/openapi.json; the rescuer holds every kind (the
 * catalog) and the webhooks context, whose discard hooks it runs, and reports through ops.
 */
export const entryReach = {
  'api.ts': ['platform', 'jobs', 'calls', 'webhooks', 'mail', 'ops', 'calendar'],
  'tenant-api.ts': ['platform', 'jobs', 'calls', 'webhooks', 'mail', 'ops', 'calendar'],
  'links.ts': ['platform', 'jobs', 'mail'],
  'rescuer.ts': ['platform', 'jobs', 'webhooks', 'mail', 'ops'],
  'intake.ts': ['platform', 'jobs', 'calls', 'webhooks', 'mail'],
  'dial-worker.ts': ['platform', 'jobs', 'calls', 'webhooks', 'mail'],
  'calls-worker.ts': ['platform', 'jobs', 'calls', 'webhooks', 'mail'],
  'webhooks-worker.ts': ['platform', 'jobs', 'webhooks', 'mail'],
  'deliveries-worker.ts': ['platform', 'jobs', 'webhooks', 'mail'],
  'mail-worker.ts': ['platform', 'jobs', 'mail'],
  'ops-worker.ts': ['platform', 'jobs', 'ops'],
  'calendar-worker.ts': ['platform', 'jobs', 'calendar', 'webhooks'],
  'calendar-tools.ts': ['platform', 'jobs', 'calendar', 'webhooks', 'calls'],
} as const satisfies Record<string, readonly string[]>;
