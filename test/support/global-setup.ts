import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../functions/platform/local/dynamodb-local.ts';

/** One DynamoDB Local (in memory) for the whole run; each test file creates its own tables in it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dynamo = await startDynamoDbLocal();
  project.provide('dynamoEndpoint', dynamo.endpoint);
  return () => dynamo.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}
