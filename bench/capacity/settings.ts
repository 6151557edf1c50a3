import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { queueNames } from '../../functions/jobs/queues.ts';
import type { QueueName } from '../../functions/jobs/queues.ts';
import { RedialStack } from '../../lib/redial-stack.ts';

/** What the deployed stack gives each function and each queue's event source: what capacity is priced and sized from. */
export interface DeployedSettings {
  /** Memory per function: `api`, `rescuer`, `worker:<queue>`. */
  memoryMb: Record<string, number>;
  /** Per queue, its worker's event source mapping: batch size and maximum concurrency. */
  queues: Record<QueueName, { batchSize: number; maxConcurrency: number; timeoutSeconds: number }>;
}

const root = join(import.meta.dirname, '..', '..');

/**
 * The settings as `cdk synth` would deploy them: the stack is built from lib/ with cdk.json's context (no
 * bundling), and each function's memory and each event source's batch size and concurrency are read off
 * the constructs. So the model follows lib/ (and whatever lib/ reads them from) with no copy of its own.
 */
export function deployedSettings(): DeployedSettings {
  const { context } = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  const app = new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] } });
  const stack = new RedialStack(app, 'CapacityModel', { callPlacerUrl: 'https://placer.example.com/calls' });
  const cfn = (fn: NodejsFunction) => fn.node.defaultChild as lambda.CfnFunction;
  const memory = (fn: NodejsFunction) => {
    const value = cfn(fn).memorySize;
    if (typeof value !== 'number') throw new Error(`${fn.node.path}: memory size is not a number in the synthesized stack`);
    return value;
  };
  const memoryMb: Record<string, number> = { api: memory(stack.apiFunction), rescuer: memory(stack.rescuerFunction) };
  const queues = {} as DeployedSettings['queues'];
  for (const name of queueNames) {
    const worker = stack.jobQueues[name].worker;
    memoryMb[`worker:${name}`] = memory(worker);
    const mapping = worker.node.findAll().find((c) => (c.node.defaultChild ?? c).constructor.name === 'CfnEventSourceMapping');
    const esm = (mapping?.node.defaultChild ?? mapping) as lambda.CfnEventSourceMapping | undefined;
    const scaling = esm?.scalingConfig as lambda.CfnEventSourceMapping.ScalingConfigProperty | undefined;
    const timeout = cfn(worker).timeout;
    if (!esm || typeof esm.batchSize !== 'number' || typeof scaling?.maximumConcurrency !== 'number' || typeof timeout !== 'number') {
      throw new Error(`the ${name} worker has no event source mapping with a batch size and a maximum concurrency`);
    }
    queues[name] = { batchSize: esm.batchSize, maxConcurrency: scaling.maximumConcurrency, timeoutSeconds: timeout };
  }
  return { memoryMb, queues };
}
