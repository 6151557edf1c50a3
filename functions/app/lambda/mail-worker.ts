// SQS entry point of the mail queue's worker. Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { mailModule } from '../../mail/module.ts';
import { lambdaHost } from '../aws.ts';
import { withSesMail } from '../mail-parts.ts';
import { buildMail } from '../contexts/mail.ts';

const { host, tracing } = lambdaHost('redial-worker-mail', withSesMail);

export const handler = host.jobs.worker('mail', mailModule.handlers(buildMail(host))).use(tracing.handlerMiddleware());
