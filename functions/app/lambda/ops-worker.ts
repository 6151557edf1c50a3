// SQS entry point of the ops queue's worker. Job failures are recorded by the job layer, never thrown.
// Each record's run is a span of the invocation's trace, annotated with its job id, kind and attempt.
import { opsModule } from '../../ops/module.ts';
import { lambdaHost } from '../aws.ts';
import { buildOps } from '../contexts/ops.ts';

const { host, tracing } = lambdaHost('redial-worker-ops');

export const handler = host.jobs.worker('ops', opsModule.handlers(buildOps(host))).use(tracing.handlerMiddleware());
