import type { MailDeps } from '../../mail/module.ts';
import { MailStore } from '../../mail/store.ts';
import { secureRandomBytes } from '../../mail/tokens.ts';
import type { SystemHost } from '../host.ts';

/** The mail context's deps over a host; a host without mail configuration cannot build them. */
export function buildMail(host: SystemHost): MailDeps {
  if (!host.mail) throw new Error('this host has no mail configuration');
  return {
    ...host.mail,
    store: new MailStore(host.db, host.tableNames.mail),
    jobs: host.jobs.client,
    clock: host.clock,
    logger: host.logger,
    metrics: host.metrics,
    random: secureRandomBytes,
  };
}
