import { InternalServerError, ProvisionedThroughputExceededException, ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { ThrottlingException } from '@aws-sdk/client-scheduler';
import { afterEach, describe, expect, it } from 'vitest';
import { jobRoutes } from '../../functions/ops/jobs-api.ts';
import { createApiHandler, route } from '../../functions/platform/http.ts';
import { startHttpServer } from '../../functions/platform/local/http-server.ts';
import type { LocalHttpServer } from '../../functions/platform/local/http-server.ts';
import { createLogger } from '../../functions/platform/logger.ts';
import { testKinds } from '../jobs/kinds.ts';
import { jobsFixture } from '../support/jobs.ts';

const servers: LocalHttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const meta = { $metadata: {} };

describe('the HTTP adapter: a transient AWS error is a 503 at once, anything else unexpected a 500', () => {
  it('AnswersEachTransientAwsError503WithRetryAfterAndNothingElse', async () => {
    let failure: Error = new Error('unset');
    const throwing = route({ method: 'GET', path: '/fail', auth: 'iam', summary: 'throws', handler: () => Promise.reject(failure) });
    const server = await startHttpServer({ port: 0, handler: createApiHandler([throwing], createLogger('test')) });
    servers.push(server);
    const answer = async (error: Error) => {
      failure = error;
      const response = await fetch(`${server.url}/fail`);
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as { error: string } };
    };
    const transient: [string, Error][] = [
      ['DynamoDB throttling', new ProvisionedThroughputExceededException({ message: 'slow down', ...meta })],
      ['a DynamoDB 500', new InternalServerError({ message: 'oops', $metadata: { httpStatusCode: 500 } })],
      ['Scheduler throttling', new ThrottlingException({ message: 'rate exceeded', Message: 'rate exceeded', ...meta })],
      ['a transaction cancelled by a conflict', new TransactionCanceledException({ message: 'cancelled', ...meta, CancellationReasons: [{ Code: 'None' }, { Code: 'TransactionConflict' }] })],
      ['a reset connection', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
    ];
    for (const [what, error] of transient) {
      expect(await answer(error), what).toEqual({ status: 503, retryAfter: '1', body: { error: 'unavailable', message: 'temporarily unavailable; nothing was written, try again' } });
    }
    const permanent: [string, Error][] = [
      ['a failed condition nobody handled', new ConditionalCheckFailedException({ message: 'no', ...meta })],
      ['a transaction cancelled by a condition', new TransactionCanceledException({ message: 'cancelled', ...meta, CancellationReasons: [{ Code: 'ConditionalCheckFailed' }] })],
      ['a plain bug', new TypeError('x is undefined')],
    ];
    for (const [what, error] of permanent) {
      expect(await answer(error), what).toEqual({ status: 500, retryAfter: null, body: { error: 'internal', message: 'internal error' } });
    }
  });

  it('ARouteWhoseDynamoDbReadIsThrottledAnswers503AndSendsItOnce', async () => {
    const kinds = testKinds();
    const fx = await jobsFixture({ handlers: kinds.handlers });
    const server = await startHttpServer({ port: 0, handler: createApiHandler(jobRoutes(() => ({ jobs: fx.jobs.client, kinds: [] })), fx.logger) });
    servers.push(server);
    // DynamoDB Local never throttles: the client refuses the Query as DynamoDB would.
    const send = fx.clients.dynamo.send.bind(fx.clients.dynamo);
    let queries = 0;
    (fx.clients.dynamo as { send: unknown }).send = (command: unknown, ...rest: unknown[]) => {
      if (command instanceof QueryCommand) {
        queries++;
        return Promise.reject(new ProvisionedThroughputExceededException({ message: 'throughput exceeded', ...meta }));
      }
      return (send as (...a: unknown[]) => unknown)(command, ...rest);
    };
    const response = await fetch(`${server.url}/v1/ops/jobs?state=available`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(queries).toBe(1);
  });
});
