import { defineModule } from '../jobs/index.ts';
import { mailQueues } from './queues.ts';
import type { MailDeps } from './context.ts';
import { mailHandlers } from './handlers.ts';
import { mailKinds } from './kinds.ts';
import { mailRoutes } from './routes.ts';
import { mailTable } from './store.ts';

export type { MailDeps } from './context.ts';

/**
 * The mail context: the owner's notifications, the owner-address confirmation and the access-request
 * approval mails (send, then mark; per-recipient and burst caps), the links those mails carry, and the
 * views of owners, requests and notices.
 */
export const mailModule = defineModule({
  name: 'mail',
  tables: { mail: mailTable },
  queues: mailQueues,
  kinds: mailKinds,
  handlers: (deps: MailDeps) => mailHandlers(deps),
  routes: (deps: () => MailDeps) => mailRoutes(deps),
});
