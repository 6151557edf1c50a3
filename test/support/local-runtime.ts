import { randomBytes } from 'node:crypto';
import { startLocalRuntime } from '../../functions/local/runtime.ts';
import type { LocalOptions, LocalRuntime } from '../../functions/local/runtime.ts';
import { dynamoEndpoint } from './dynamo.ts';

/**
 * The local runtime as `npm start` runs it, its tables kept under a fresh prefix in the run's shared
 * DynamoDB Local (global-setup) instead of a DynamoDB Local of its own: a JVM start saved per runtime. A
 * test of DynamoDB Local's own life (its data kept across a restart, its process stopped with the
 * runtime's) starts the runtime itself.
 */
export function startTestRuntime(options: Omit<LocalOptions, 'dataDir' | 'dynamo'>): Promise<LocalRuntime> {
  return startLocalRuntime({ ...options, dataDir: undefined, dynamo: { endpoint: dynamoEndpoint(), tablePrefix: `rt${randomBytes(5).toString('hex')}` } });
}
