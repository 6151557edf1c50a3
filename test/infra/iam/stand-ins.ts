import type { SentRequest } from '../../../functions/platform/recorder.ts';
import type { StandInRequest } from '../../support/lambda-bundles.ts';

/**
 * The bundle test's requests (test/infra/bundles.test.ts) for the IAM check: each request a deployed
 * bundle sent to a stand-in, read back from the wire as the {@link SentRequest} the SDK command was, so
 * test/infra/iam/requests.ts turns it into what AWS authorizes, as it does for the tour's and the seeds'.
 * There the code's clients are seen in-process; here they run in a fresh process per bundle, with the
 * template's environment, so this is the one run in which the Secrets Manager, KMS and SES clients are
 * the deployed code's own.
 */

/** The log's service names, by stand-in (the `AWS_ENDPOINT_URL_<SERVICE>` suffix). */
const SERVICES: Readonly<Record<string, string>> = {
  DYNAMODB: 'DynamoDB',
  SQS: 'SQS',
  SCHEDULER: 'Scheduler',
  SECRETS_MANAGER: 'SecretsManager',
  KMS: 'KMS',
  SESV2: 'SES',
};

/**
 * `request` as the command `fn` sent: a JSON-protocol request (DynamoDB, SQS, Secrets Manager, KMS) by its
 * X-Amz-Target's operation and its body; a REST one (Scheduler, SES v2) by its method and path, with what
 * the path and query carry put back in the input (a schedule's name, a deletion's group).
 */
export function sentRequestOf(fn: string, request: StandInRequest): SentRequest {
  const service = SERVICES[request.service];
  if (!service) throw new Error(`a request to the ${request.service} stand-in, which has no IAM mapping here`);
  const body = typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, unknown>) : {};
  const target = /^[A-Za-z0-9_]+\.([A-Za-z]+)$/.exec(request.operation);
  if (target) return { function: fn, service, operation: target[1]!, params: body };
  const url = new URL(request.url, 'http://stand-in');
  const schedule = /^\/schedules\/([^/]+)$/.exec(url.pathname);
  if (service === 'Scheduler' && schedule && request.operation.startsWith('POST ')) {
    return { function: fn, service, operation: 'CreateSchedule', params: { Name: decodeURIComponent(schedule[1]!), ...body } };
  }
  if (service === 'Scheduler' && schedule && request.operation.startsWith('DELETE ')) {
    return { function: fn, service, operation: 'DeleteSchedule', params: { Name: decodeURIComponent(schedule[1]!), GroupName: url.searchParams.get('groupName') ?? undefined } };
  }
  if (service === 'SES' && request.operation === 'POST /v2/email/outbound-emails') return { function: fn, service, operation: 'SendEmail', params: body };
  throw new Error(`${fn}'s ${request.operation} to the ${request.service} stand-in: no operation known for it in test/infra/iam/stand-ins.ts`);
}

/** A local value's logical id: the template's values are resolved to names and ARNs that end in it (test/support/lambda-bundles.ts). */
const logicalIdIn = (value: string): string => value.split(/[/:]/).pop()!;

/** Environment variables that name one resource of the stack by a value ending in its logical id. */
const RESOURCE_VARIABLES = ['SCHEDULER_GROUP', 'SCHEDULER_ROLE_ARN', 'CALL_WEBHOOK_SECRET_ARN', 'WEBHOOK_SECRETS_KEY_ARN'] as const;

/**
 * What the names in a bundle's requests stand for (`SentRequests.names`), from the environment it ran with:
 * this run's tables by their keys, each job queue's URL (on the SQS stand-in) and ARN, the schedule group,
 * the Scheduler role, the signing secret and the endpoint-secrets key by their logical ids, and the mail
 * domain as the SES identity.
 */
export function namesOf(env: Readonly<Record<string, string>>, tableNames: Readonly<Record<string, string>>): Record<string, string> {
  const names: Record<string, string> = Object.fromEntries(Object.entries(tableNames).map(([key, name]) => [name, `table:${key}`]));
  for (const q of Object.values(JSON.parse(env['JOB_QUEUES'] ?? '{}') as Record<string, { url: string; arn: string }>)) {
    names[q.url] = logicalIdIn(q.arn);
    names[q.arn] = logicalIdIn(q.arn);
  }
  for (const variable of RESOURCE_VARIABLES) if (env[variable]) names[env[variable]] = logicalIdIn(env[variable]);
  if (env['MAIL_DOMAIN']) names[env['MAIL_DOMAIN']] = 'identity:mail';
  return names;
}
