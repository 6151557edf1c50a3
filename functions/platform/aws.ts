import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { KMSClient } from '@aws-sdk/client-kms';
import { S3Client } from '@aws-sdk/client-s3';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { SESv2Client } from '@aws-sdk/client-sesv2';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isContention } from './dynamo.ts';
import type { RequestRecorder } from './recorder.ts';

/**
 * The only place in redial that builds AWS SDK clients. Every client is built with the SDK's own
 * retries off (`maxAttempts: 1`): the job layer is the one owner of retries, and a synchronous call is
 * sent once. The retry-owner gate (test/gate) fails the build if a client is built anywhere else.
 */
export interface AwsClientOptions {
  region?: string;
  /** Endpoint overrides, for DynamoDB Local and tests. */
  endpoints?: { dynamodb?: string; sqs?: string; scheduler?: string; ses?: string; secrets?: string; kms?: string };
  /** Static credentials, for DynamoDB Local (it accepts any). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
  /** Counts every request sent, by operation; the benchmarks use it. */
  requestCounter?: RequestCounter;
  /**
   * Records every request in detail (tables, partitions, item and index sizes); the capacity benchmark
   * uses it. Absent (production), no middleware is installed at all.
   */
  recorder?: RequestRecorder;
  /**
   * Wraps each client for tracing (functions/platform/xray.ts `capture`: its requests become X-Ray
   * subsegments and carry the trace on). Absent (locally, in tests), clients are not wrapped.
   */
  capture?: <T>(client: T) => T;
  /**
   * Wraps every request of every client (the fault simulator, sim/, injects its plan's faults here).
   * Absent (production), no middleware is installed at all.
   */
  interceptor?: RequestInterceptor;
}

/** An SDK client, as an interceptor sees it: a middleware stack to add to. */
export interface InstrumentableClient {
  middlewareStack: {
    add(
      mw: (next: (args: { input: unknown }) => Promise<{ output: unknown }>, ctx: { commandName?: string }) => (args: { input: unknown }) => Promise<{ output: unknown }>,
      opts: { step: 'initialize' | 'build'; name: string },
    ): void;
  };
}

/** The AWS services redial's clients speak to. */
export type AwsService = 'DynamoDB' | 'SQS' | 'Scheduler' | 'SES' | 'SecretsManager' | 'KMS' | 'S3';

/**
 * Something that wraps each request a client sends: it may fail it before it is sent, or after it was
 * applied (a lost response). createAwsClients installs it only when one is passed.
 */
export interface RequestInterceptor {
  /** Installs the interceptor on `client`. For DynamoDB, requests are seen marshalled (the raw client's build step). */
  instrument(client: InstrumentableClient, service: AwsService): void;
}

/** Counts AWS requests by `Service.Operation`. */
export class RequestCounter {
  readonly counts = new Map<string, number>();

  add(operation: string): void {
    this.counts.set(operation, (this.counts.get(operation) ?? 0) + 1);
  }

  total(): number {
    let sum = 0;
    for (const n of this.counts.values()) sum += n;
    return sum;
  }

  reset(): void {
    this.counts.clear();
  }

  toJSON(): Record<string, number> {
    return Object.fromEntries([...this.counts.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }
}

/** The clients redial uses. */
export interface AwsClients {
  dynamo: DynamoDBDocumentClient;
  sqs: SQSClient;
  scheduler: SchedulerClient;
  ses: SESv2Client;
  /** Secrets read once at cold start (the call-result intake's signing secret). */
  secrets: SecretsManagerClient;
  /** The key that encrypts webhook endpoint secrets at rest (functions/platform/secret-key.ts). */
  kms: KMSClient;
}

interface MiddlewareHost {
  middlewareStack: {
    add(
      mw: (next: (args: unknown) => Promise<unknown>, ctx: { clientName?: string; commandName?: string }) => (args: unknown) => Promise<unknown>,
      opts: { step: 'initialize'; name: string },
    ): void;
  };
}

function count(client: MiddlewareHost, service: string, counter: RequestCounter | undefined): void {
  if (!counter) return;
  client.middlewareStack.add(
    (next, ctx) => (args) => {
      counter.add(`${service}.${(ctx.commandName ?? 'Unknown').replace(/Command$/, '')}`);
      return next(args);
    },
    { step: 'initialize', name: 'redialRequestCounter' },
  );
}

type ClientOptions = Omit<AwsClientOptions, 'endpoints'> & { endpoint?: string | undefined };

const baseOf = (options: ClientOptions) => ({
  ...(options.region ? { region: options.region } : {}),
  ...(options.credentials ? { credentials: options.credentials } : {}),
  ...(options.endpoint ? { endpoint: options.endpoint } : {}),
});

/** Counts, records and intercepts one client's requests, as `options` ask; returns the client, captured for tracing unless `capture` is false. */
function instrument<T>(client: T, service: AwsService, options: ClientOptions, capture = true): T {
  const captured = capture && options.capture ? options.capture(client) : client;
  count(captured as unknown as MiddlewareHost, service, options.requestCounter);
  if (service !== 'DynamoDB') options.recorder?.instrument(captured, service);
  options.interceptor?.instrument(captured as unknown as InstrumentableClient, service);
  return captured;
}

/*
 * One builder per service, so that a Lambda bundle holds only the SDK clients its function uses (esbuild
 * drops an unused client package: the SDK's packages declare no side effects).
 */

/** The DynamoDB document client (over a raw client that counts, records and intercepts). */
export function dynamoClient(options: ClientOptions = {}): DynamoDBDocumentClient {
  // Captured before the document client wraps it: the document client sends through this client's stack.
  const raw = instrument(new DynamoDBClient({ ...baseOf(options), maxAttempts: 1 }), 'DynamoDB', { ...options, interceptor: undefined });
  // The recorder reads items back on a client of its own, which it does not record.
  options.recorder?.instrumentDynamo(raw, new DynamoDBClient({ ...baseOf(options), maxAttempts: 1 }));
  options.interceptor?.instrument(raw as unknown as InstrumentableClient, 'DynamoDB');
  return DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
}

export const sqsClient = (options: ClientOptions = {}): SQSClient => instrument(new SQSClient({ ...baseOf(options), maxAttempts: 1 }), 'SQS', options);

export const schedulerClient = (options: ClientOptions = {}): SchedulerClient => instrument(new SchedulerClient({ ...baseOf(options), maxAttempts: 1 }), 'Scheduler', options);

export const sesClient = (options: ClientOptions = {}): SESv2Client => instrument(new SESv2Client({ ...baseOf(options), maxAttempts: 1 }), 'SES', options);

/**
 * Not captured: secrets are read at cold start, outside any invocation, where there is no trace to join
 * (the X-Ray SDK would log a missing-context error on every cold start).
 */
export const secretsClient = (options: ClientOptions = {}): SecretsManagerClient =>
  instrument(new SecretsManagerClient({ ...baseOf(options), maxAttempts: 1 }), 'SecretsManager', options, false);

export const kmsClient = (options: ClientOptions = {}): KMSClient => instrument(new KMSClient({ ...baseOf(options), maxAttempts: 1 }), 'KMS', options);

/**
 * S3: the contacts uploads' bucket (functions/calls/imports/uploads.ts), presigned PUTs and the import's read.
 * Checksums only where S3 requires them: by default the SDK signs a presigned PUT with the CRC32 of an empty
 * body (`x-amz-checksum-crc32=AAAAAA==`), which S3 then holds the uploaded file to, and refuses it.
 */
export const s3Client = (options: ClientOptions = {}): S3Client =>
  instrument(new S3Client({ ...baseOf(options), maxAttempts: 1, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' }), 'S3', options);

/** Builds every one of redial's AWS clients (the local runtime, the tools and the tests), each sending every request exactly once. */
export function createAwsClients(options: AwsClientOptions = {}): AwsClients {
  const { endpoints, ...rest } = options;
  const at = (endpoint: string | undefined): ClientOptions => ({ ...rest, endpoint });
  return {
    dynamo: dynamoClient(at(endpoints?.dynamodb)),
    sqs: sqsClient(at(endpoints?.sqs)),
    scheduler: schedulerClient(at(endpoints?.scheduler)),
    ses: sesClient(at(endpoints?.ses)),
    secrets: secretsClient(at(endpoints?.secrets)),
    kms: kmsClient(at(endpoints?.kms)),
  };
}

/** A secret's string value, read once (a cold start that cannot read it fails, and Lambda starts another). */
export async function readSecretString(client: SecretsManagerClient, secretId: string): Promise<string> {
  const result = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
  if (result.SecretString === undefined) throw new Error(`secret ${secretId} has no string value`);
  return result.SecretString;
}

/** Credentials DynamoDB Local accepts; never used against AWS. */
export const localCredentials = { accessKeyId: 'local', secretAccessKey: 'local' };

/** Transient errors that are not contention ({@link isContention} has those): the service or the network failed. */
const TRANSIENT_NAMES = new Set([
  'TransactionInProgressException',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TimeoutError',
  'RequestTimeout',
]);

/**
 * Whether an AWS (or network) error is transient: worth trying again later, by the job layer or by the
 * caller of a synchronous request (which gets a 503 at once). Contention (a conflict, throttling, a
 * capacity limit; also as a cancelled transaction's reason) is transient.
 */
export function isTransientAwsError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (isContention(error)) return true;
  const meta = error as { $retryable?: unknown; $metadata?: { httpStatusCode?: number }; code?: string };
  if (meta.$retryable) return true;
  if (TRANSIENT_NAMES.has(error.name)) return true;
  if ((meta.$metadata?.httpStatusCode ?? 0) >= 500) return true;
  return ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'].includes(meta.code ?? '');
}
