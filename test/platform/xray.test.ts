import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { XrayTracing } from '../../functions/platform/xray.ts';

const run = promisify(execFile);

/** A subsegment as the X-Ray SDK sends it to the daemon. */
interface Subsegment {
  name: string;
  id: string;
  trace_id: string;
  parent_id: string;
  type?: string;
  namespace?: string;
  annotations?: Record<string, unknown>;
  metadata?: Record<string, Record<string, unknown>>;
  fault?: boolean;
  error?: boolean;
  cause?: { exceptions: { message: string }[] };
}

const TRACE_ID = '1-5759e988-bd862e3fe1be46a994272793';

/**
 * Runs test/support/xray-lambda.ts in Lambda's environment with a UDP socket as the X-Ray daemon, and
 * returns every subsegment it sent and what it printed.
 */
async function invokeInLambdaEnvironment(): Promise<{ subsegments: Subsegment[]; printed: { enabled: boolean; headers: string[] } }> {
  const daemon = createSocket('udp4');
  const subsegments: Subsegment[] = [];
  daemon.on('message', (datagram) => {
    // `{"format":"json","version":1}\n{…document…}`
    const [, document] = datagram.toString('utf8').split('\n');
    if (document) subsegments.push(JSON.parse(document) as Subsegment);
  });
  await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', resolve));
  try {
    const { stdout } = await run(process.execPath, [join(import.meta.dirname, '..', 'support', 'xray-lambda.ts')], {
      env: {
        PATH: process.env['PATH'] ?? '',
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
        LAMBDA_TASK_ROOT: '/var/task',
        _HANDLER: 'index.handler',
        _X_AMZN_TRACE_ID: `Root=${TRACE_ID};Parent=53995c3f42cd8ad8;Sampled=1`,
        AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
        AWS_XRAY_LOG_LEVEL: 'silent',
        POWERTOOLS_DEV: 'false',
      },
      timeout: 30_000,
    });
    // Datagrams sent just before the child exited may still be on their way.
    await new Promise((resolve) => setTimeout(resolve, 200));
    return { subsegments, printed: JSON.parse(stdout.trim().split('\n').at(-1)!) as { enabled: boolean; headers: string[] } };
  } finally {
    daemon.close();
  }
}

describe('X-Ray through Powertools Tracer (functions/platform/xray.ts)', () => {
  it('in Lambda: each span is a subsegment of the handler’s with its own annotations, and AWS requests inside a span are its children and carry the trace on', async () => {
    const { subsegments, printed } = await invokeInLambdaEnvironment();
    expect(printed.enabled).toBe(true);
    for (const s of subsegments) expect(s.trace_id).toBe(TRACE_ID);

    const handler = subsegments.find((s) => s.name === '## index.handler')!;
    expect(handler.annotations).toMatchObject({ Service: 'redial-test', batchId: 'b-1' });
    expect(handler.annotations).toHaveProperty('ColdStart');
    // captureResponse is off: the handler's answer is not in the trace.
    expect(JSON.stringify(handler.metadata ?? {})).not.toContain('"ok"');

    const runs = subsegments.filter((s) => s.name === '### job.run');
    expect(runs).toHaveLength(4);
    for (const s of runs) expect(s.parent_id).toBe(handler.id);
    const succeeded = runs.filter((s) => !s.fault);
    expect(succeeded.map((s) => s.annotations).sort((a, b) => String(a?.['jobId']).localeCompare(String(b?.['jobId'])))).toEqual(
      ['job-a', 'job-b', 'job-c'].map((jobId) => ({ jobId, kind: 'test.kind', attempt: 2 })),
    );
    for (const s of succeeded) expect(s.metadata?.['redial-test']?.['result']).toEqual({ jobId: s.annotations?.['jobId'], result: 'completed' });
    const failed = runs.find((s) => s.fault)!;
    expect(failed.cause?.exceptions[0]?.message).toBe('run failed');

    const wake = subsegments.find((s) => s.name === '### job.wake')!;
    expect(wake.parent_id).toBe(succeeded.find((s) => s.annotations?.['jobId'] === 'job-b')!.id);
    const sqs = subsegments.find((s) => s.name === 'SQS')!;
    expect(sqs.namespace).toBe('aws');
    expect(sqs.parent_id).toBe(wake.id);
    // The request carried the trace to SQS, naming the SQS subsegment as its parent: what links a consumer to this producer.
    expect(printed.headers).toHaveLength(1);
    expect(printed.headers[0]).toContain(`Root=${TRACE_ID}`);
    expect(printed.headers[0]).toContain(`Parent=${sqs.id}`);
  });

  it('outside Lambda (locally, in tests): off — a span runs its code and records nothing, clients are left as they are', async () => {
    const tracing = new XrayTracing('redial-test');
    expect(tracing.enabled).toBe(false);
    const seen: string[] = [];
    expect(
      await tracing.span('job.run', async (span) => {
        span.annotate('jobId', 'j');
        span.describe('x', 1);
        seen.push('ran');
        return 42;
      }),
    ).toBe(42);
    await expect(tracing.span('job.run', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    tracing.annotate('batchId', 'b');
    expect(seen).toEqual(['ran']);
    const client = new SQSClient({ region: 'eu-west-1', maxAttempts: 1 });
    const before = client.middlewareStack.identify();
    expect(tracing.capture(client)).toBe(client);
    expect(client.middlewareStack.identify()).toEqual(before);
  });
});
