import { sesClient } from '../platform/aws.ts';
import { parseMailConfig } from '../mail/config.ts';
import type { MailServices } from '../mail/context.ts';
import { SesMailTransport } from '../mail/transport.ts';
import type { MailTransport } from '../mail/transport.ts';
import type { LambdaHost } from './aws.ts';

// The mail parts of a Lambda host, apart from functions/app/aws.ts so that an entry that neither sends
// nor prepares mail does not reach functions/mail through its host (the structure gate's entry-reach rule).

/** The mail context's configuration with SES as its transport: the mail worker's (the one function that sends mail). */
export const withSesMail = ({ tracing }: LambdaHost): { mail: MailServices } => {
  const config = parseMailConfig();
  if (config.transport.type !== 'ses') throw new Error(`on AWS mail leaves through SES, not ${config.transport.type}`);
  const ses = sesClient({ capture: (client) => tracing.capture(client) });
  return { mail: { config, transport: new SesMailTransport(ses, { configurationSet: config.transport.configurationSet }) } };
};

/** A transport for functions that only prepare mail (the links, the APIs): sending is the mail worker's. */
const noTransport: MailTransport = {
  name: 'ses',
  send: () => Promise.reject(new Error('this function sends no mail; the mail worker does')),
};

/** The mail context's configuration without a transport: the functions that serve mail routes (links, operators' access requests) and the rescuer. */
export const withMailLinks = (): { mail: MailServices } => ({ mail: { config: parseMailConfig(), transport: noTransport } });

