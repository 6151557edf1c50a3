/**
 * Grants that the IAM check's recorded run (test/infra/iam/tour.ts) does not reach, each with the code that
 * needs it: a path the run does not take, one that needs a fault it does not inject (the simulation's seeds,
 * which record under faults, reach several: test/sim/seeds.test.ts), or a request only a deployed function
 * sends. Keyed `function action resource`, as the table in
 * docs/operations.md shows them; every other grant must be used by a recorded request in every run.
 *
 * A grant listed here that no code needs is a grant to remove: the list says where to look.
 */
/**
 * Why the booking side's grants are not recorded yet (issue 29, docs/appointments.md): the tools' routes
 * (functions/calendar/tools-api.ts) are not served until their calls ports are wired, and the settle job
 * (settle-job.ts, the calendar worker's) runs only after a booking, which the tour cannot make before then.
 */
const BOOKING_SIDE = 'the agent’s calendar tools (functions/calendar/tools-api.ts, not served until their calls ports are wired) and the settle job (settle-job.ts), which runs after a booking';

export const NOT_RECORDED: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    [
      'calendarTools dynamodb:GetItem table:calls',
      'calendarTools dynamodb:ConditionCheckItem table:calls',
      'calendarTools dynamodb:GetItem table:calendar',
      'calendarTools dynamodb:Query table:calendar',
      'calendarTools dynamodb:PutItem table:calendar',
      'calendarTools dynamodb:UpdateItem table:calendar',
      'calendarTools dynamodb:DeleteItem table:calendar',
      'calendarTools dynamodb:PutItem table:jobs',
      'calendarTools dynamodb:GetItem table:webhooks',
      'calendarTools dynamodb:BatchGetItem table:webhooks',
      'calendarTools dynamodb:Query table:webhooks',
      'calendarTools dynamodb:UpdateItem table:webhooks',
      'calendarTools dynamodb:PutItem table:webhooks',
      'calendarTools sqs:SendMessage queue:calendar',
      'calendarTools sqs:SendMessage queue:deliveries',
      'calendarTools sqs:SendMessage queue:webhooks',
      'calendarTools secretsmanager:GetSecretValue secret:callWebhook',
      'calendarTools kms:Decrypt key:webhookSecrets',
      'calendarWorker dynamodb:GetItem table:calendar',
      'calendarWorker dynamodb:UpdateItem table:calendar',
      'calendarWorker dynamodb:GetItem table:webhooks',
      'calendarWorker dynamodb:BatchGetItem table:webhooks',
      'calendarWorker dynamodb:Query table:webhooks',
      'calendarWorker dynamodb:UpdateItem table:webhooks',
      'calendarWorker dynamodb:PutItem table:webhooks',
      'calendarWorker dynamodb:GetItem table:jobs',
      'calendarWorker dynamodb:PutItem table:jobs',
      'calendarWorker dynamodb:UpdateItem table:jobs',
      'calendarWorker sqs:SendMessage queue:calendar',
      'calendarWorker sqs:SendMessage queue:deliveries',
      'calendarWorker sqs:SendMessage queue:webhooks',
      'calendarWorker scheduler:CreateSchedule schedule:jobs/*',
      'calendarWorker iam:PassRole role:scheduler',
      'calendarWorker kms:Decrypt key:webhookSecrets',
    ].map((key) => [key, BOOKING_SIDE]),
  ),
  'api sqs:SendMessage queue:calendar': 'ops retry of a job of any kind runs it now on its own queue (functions/ops/jobs-api.ts → JobClient.retry); the run has no supplier.invoke job',
  'rescuer sqs:SendMessage queue:calendar': 'wakes a job of any queue whose wake-up or attempt was lost (functions/jobs/rescuer.ts); the run has no supplier.invoke job',

  'intake secretsmanager:GetSecretValue secret:callWebhook':
    'read once per cold start (functions/app/lambda/intake.ts); the local host is handed the secret, so only a bundle run as on AWS sends it: test/infra/bundles.test.ts decides it under the intake’s role',
  'intake sqs:SendMessage queue:webhooks':
    'wakes a webhook.fanout (a call result for more than five endpoints) or a webhook.restart of a list whose lease was let go after the look (functions/webhooks/publish.ts); the run’s fanouts are of batches’ ends',

  'api sqs:SendMessage queue:calls': 'ops retry of a job of any kind runs it now on its own queue (functions/ops/jobs-api.ts → JobClient.retry); the run retries dial, delivery and probe jobs',
  'api sqs:SendMessage queue:webhooks': 'ops retry of a job of any kind runs it now on its own queue (functions/ops/jobs-api.ts → JobClient.retry); the run retries dial, delivery and probe jobs',

  'rescuer dynamodb:PutItem table:webhooks':
    'a delivery whose last attempt was lost is discarded by the rescuer, and webhook.deliver’s discard hook writes the endpoint’s discard marker (functions/webhooks/delivery.ts); it takes 18 lost attempts',
  'rescuer sqs:SendMessage queue:calls': 'wakes a job of any queue whose wake-up or attempt was lost (functions/jobs/rescuer.ts); the run loses none (the seeds do)',
  'rescuer sqs:SendMessage queue:deliveries': 'wakes a job of any queue whose wake-up or attempt was lost (functions/jobs/rescuer.ts); the run loses none (the seeds do)',
  'rescuer sqs:SendMessage queue:dial': 'wakes a job of any queue whose wake-up or attempt was lost (functions/jobs/rescuer.ts); the run loses none (the seeds do)',
  'rescuer sqs:SendMessage queue:mail': 'wakes a job of any queue whose wake-up or attempt was lost (functions/jobs/rescuer.ts); the run loses none (the seeds do)',
  'rescuer sqs:SendMessage queue:ops': 'wakes a job of any queue whose wake-up or attempt was lost (functions/jobs/rescuer.ts); the run loses none (the seeds do)',
  'rescuer scheduler:CreateSchedule schedule:jobs/*': 'a job whose attempt was lost gets its next attempt after its policy’s backoff, which may be longer than 15 minutes (functions/jobs/rescuer.ts)',
  'rescuer iam:PassRole role:scheduler': 'passed with each schedule it creates (see CreateSchedule)',
  'rescuer dynamodb:GetItem table:jobs': 'a discard whose write got no answer is read back, to learn whether it was written and counted (functions/jobs/discards.ts); the run loses no answer' ,

  'tenantApi scheduler:CreateSchedule schedule:jobs/*':
    'a batch created with a `startAt` more than 15 minutes ahead, or paused (its expiry job 30 days on), waits on a schedule (functions/calls/control/); the run schedules no batch and pauses none (the simulation’s seeds with a pause record it: test/sim/seeds.test.ts)',
  'tenantApi iam:PassRole role:scheduler': 'passed with each schedule it creates (see CreateSchedule)',
  'api scheduler:CreateSchedule schedule:jobs/*': 'the operator copies of the control routes: a `startAt` more than 15 minutes ahead, a pause’s expiry 30 days on (functions/calls/control/)',
  'api iam:PassRole role:scheduler': 'passed with each schedule it creates (see CreateSchedule)',
  'dialWorker dynamodb:DeleteItem table:calls':
    'a deferred contact is dialled (or ended) from the deferred list, whose entry its transaction deletes (functions/calls/compliance/dial-items.ts take); the run’s batches have no calling window, so nothing is deferred (test/calls/compliance-dial.test.ts defers and dials)',

  'mailWorker sqs:SendMessage queue:mail': 'its kinds’ retries and snoozes of up to 15 minutes (a transport that failed, functions/mail/handlers.ts) wake them on their own queue; the run’s mail all goes out',
  'mailWorker scheduler:CreateSchedule schedule:jobs/*': 'a message over a cap waits until the cap’s hour ends (functions/mail/handlers.ts); the run stays under the caps',
  'mailWorker iam:PassRole role:scheduler': 'passed with each schedule it creates (see CreateSchedule)',
  'mailWorker dynamodb:GetItem table:jobs': 'a discard whose write got no answer is read back, to learn whether it was written and counted (functions/jobs/discards.ts); the run loses no answer',

  'deliveriesWorker dynamodb:GetItem table:webhooks': 'a delivery that finds its endpoint busy parks, then reads the endpoint again (functions/webhooks/delivery.ts parkAndLook)',
  'deliveriesWorker dynamodb:GetItem table:jobs': 'a delivery from the wait list whose job exists already is read (functions/webhooks/waitlist.ts promote); a discard whose write got no answer is read back, to learn whether it was written and counted (functions/jobs/discards.ts)',
  'deliveriesWorker dynamodb:PutItem table:jobs': 'a delivery from the wait list becomes a job when handed the lease, or when it fails (functions/webhooks/waitlist.ts promote, enqueueAttempted)',
  'deliveriesWorker sqs:SendMessage queue:webhooks': 'enqueues webhook.wake for a waiting delivery it cannot take on itself (functions/webhooks/waitlist.ts)',
  'deliveriesWorker scheduler:CreateSchedule schedule:jobs/*': 'retries of 30 minutes to 10 hours (deliveryPolicy), a Retry-After or a failing endpoint’s next probe beyond 15 minutes (functions/webhooks/delivery.ts); the run’s waits are shorter',
  'tenantApi s3:PutObject bucket:uploads/*': 'signs upload URLs (functions/calls/imports/s3-uploads.ts: a presigned PUT acts with the signer’s rights); the run’s uploads go to the local store (functions/local/uploads.ts), S3 only on AWS',
  'tenantApi s3:GetObject bucket:uploads/*': 'reads an uploaded file for its import (POST /v1/batches/imports, functions/calls/imports/routes.ts); the run’s uploads are local, S3 only on AWS',
  'api s3:PutObject bucket:uploads/*': 'the operator copy of POST /v1/uploads signs upload URLs as the tenant route does; the run’s uploads are local, S3 only on AWS',
  'api s3:GetObject bucket:uploads/*': 'the operator copy of POST /v1/batches/imports reads the uploaded file; the run’s uploads are local, S3 only on AWS',
  'tenantApi scheduler:DeleteSchedule schedule:jobs/*': 'redeliver retries a discarded delivery now, which deletes a schedule the job may still hold (functions/webhooks/endpoints.ts, functions/jobs/client.ts retry, functions/jobs/apply.ts)',
  'deliveriesWorker scheduler:DeleteSchedule schedule:jobs/*': 'takes on (claimNext) or wakes a waiting delivery whose own backoff has a schedule to come (functions/webhooks/waitlist.ts, functions/jobs/apply.ts)',
  'deliveriesWorker iam:PassRole role:scheduler': 'passed with each schedule it creates (see CreateSchedule)',

  'webhooksWorker dynamodb:DeleteItem table:webhooks': 'drops a stale wait-list entry, one whose delivery was cancelled or has finished (functions/webhooks/waitlist.ts)',
  'webhooksWorker dynamodb:PutItem table:webhooks': 'a fanout puts a delivery behind an endpoint that is busy (functions/webhooks/fanout.ts)',
  'webhooksWorker dynamodb:GetItem table:jobs': 'a repeated fanout or restart finds a delivery’s job made already and reads it (functions/webhooks/waitlist.ts promote); a discard whose write got no answer is read back, to learn whether it was written and counted (functions/jobs/discards.ts)',
  'webhooksWorker sqs:SendMessage queue:webhooks': 'its kinds’ retries (defaultPolicy, up to 256 s) wake them on their own queue; none fails in the run',
  'webhooksWorker scheduler:CreateSchedule schedule:jobs/*': 'a delivery made a job with its failed attempt as its first waits out that attempt’s backoff, up to 10 hours (functions/webhooks/waitlist.ts enqueueAttempted)',
  'webhooksWorker scheduler:DeleteSchedule schedule:jobs/*': 'webhook.wake wakes a waiting delivery whose own backoff has a schedule to come (functions/webhooks/context.ts, functions/jobs/apply.ts)',
  'webhooksWorker iam:PassRole role:scheduler': 'passed with each schedule it creates (see CreateSchedule)',

  'dialWorker dynamodb:GetItem table:webhooks': 'publishing the result of a call the placer refused (functions/calls/dialer.ts) to an endpoint that is busy: the look at its lease after the commit (functions/webhooks/publish.ts)',
  'dialWorker dynamodb:PutItem table:webhooks': 'publishing the result of a call the placer refused to an endpoint that is busy: its wait-list entry (functions/webhooks/publish.ts)',
  'dialWorker sqs:SendMessage queue:webhooks': 'the result of a refused call, for a tenant with more than five endpoints (webhook.fanout) or a list restarted (functions/webhooks/publish.ts)',

  'dialWorker dynamodb:GetItem table:jobs': 'a discard whose write got no answer is read back, to learn whether it was written and counted (functions/jobs/discards.ts); the run loses no answer',
  'opsWorker dynamodb:GetItem table:jobs': 'a discard whose write got no answer is read back, to learn whether it was written and counted (functions/jobs/discards.ts); the run loses no answer',
  'callsWorker dynamodb:GetItem table:jobs':
    'a watchdog whose batch no longer names it open reads its successor’s job to learn where its run stopped (functions/calls/watchdog.ts; the seeds reach it, under faults); a discard whose write got no answer is read back, to learn whether it was written and counted (functions/jobs/discards.ts)',
  'callsWorker dynamodb:Query table:calls': 'calls.import reads an Importing batch’s staged chunks (functions/calls/imports/staging.ts readChunk); the run imports no large file',
  'callsWorker dynamodb:BatchWriteItem table:calls': 'calls.import writes each page’s data items (functions/calls/imports/job.ts, store.ts putItems); the run imports no large file',
  'tenantApi dynamodb:BatchWriteItem table:calls': 'a batch’s contacts’ data items (POST /v1/batches with externalId, variables or a zone; POST /v1/batches/csv) and an import’s staged chunks (POST /v1/batches/imports), store.ts putItems; the run’s batches carry numbers only',
  'api dynamodb:BatchWriteItem table:calls': 'the operator copies of the batch-creating routes write the same items as the tenant routes (store.ts putItems); the run’s batches carry numbers only',
  'callsWorker sqs:SendMessage queue:calls': 'its kinds’ snoozes and retries of up to 15 minutes (a watchdog waiting for its calls to time out, a finaliser continuing) wake them on their own queue',
  'callsWorker sqs:SendMessage queue:dial': 'the next round’s dial, when the batch’s retry backoff is 15 minutes or less (functions/calls/finaliser.ts); the run’s next round waits longer (a schedule)',
};
