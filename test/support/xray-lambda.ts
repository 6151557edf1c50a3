// A Lambda invocation in miniature, for test/platform/xray.test.ts: run in a child process whose
// environment is Lambda's (AWS_EXECUTION_ENV, LAMBDA_TASK_ROOT, _X_AMZN_TRACE_ID, AWS_XRAY_DAEMON_ADDRESS
// pointing at the test's UDP socket), so Powertools Tracer and the X-Ray SDK run as they do on AWS and
// send every closed subsegment to the "daemon". It prints what it observed as one JSON line.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import { createAwsClients } from '../../functions/platform/aws.ts';
import { XrayTracing } from '../../functions/platform/xray.ts';

// A stand-in SQS endpoint: it keeps the trace header of the request it gets, and fails it.
const headers: (string | undefined)[] = [];
const server = createServer((req, res) => {
  headers.push(req.headers['x-amzn-trace-id'] as string | undefined);
  req.resume();
  req.on('end', () => {
    res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0' });
    res.end(JSON.stringify({ __type: 'InternalError', message: 'stand-in' }));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

const tracing = new XrayTracing('redial-test');
const clients = createAwsClients({
  region: 'eu-west-1',
  credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
  endpoints: { sqs: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
  capture: (client) => tracing.capture(client),
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const handler = middy()
  .use(tracing.handlerMiddleware())
  .handler(async () => {
    tracing.annotate('batchId', 'b-1');
    // Three runs at once, each annotating its own span after a pause of its own.
    const runs = [
      { jobId: 'job-a', pauseMs: 30 },
      { jobId: 'job-b', pauseMs: 5 },
      { jobId: 'job-c', pauseMs: 15 },
    ].map(({ jobId, pauseMs }) =>
      tracing.span('job.run', async (span) => {
        span.annotate('jobId', jobId);
        await pause(pauseMs);
        span.annotate('kind', 'test.kind');
        span.annotate('attempt', 2);
        span.describe('result', { jobId, result: 'completed' });
        if (jobId === 'job-b') {
          await tracing.span('job.wake', async () => {
            await clients.sqs.send(new SendMessageCommand({ QueueUrl: `http://127.0.0.1/123456789012/q`, MessageBody: '{}' })).catch(() => undefined);
          });
        }
      }),
    );
    await Promise.all(runs);
    await tracing.span('job.run', () => Promise.reject(new Error('run failed'))).catch(() => undefined);
    return { ok: true };
  });

await handler({}, { awsRequestId: 'r-1', functionName: 'f', getRemainingTimeInMillis: () => 10_000 } as never);
server.close();
// The SDK sends each closed subsegment at once (UDP); give the last datagrams a moment to leave.
await pause(100);
console.log(JSON.stringify({ enabled: tracing.enabled, headers }));
