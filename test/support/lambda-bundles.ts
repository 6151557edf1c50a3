/**
 * The deployed functions' bundles, built and loaded as Lambda loads them: each entry bundled by esbuild
 * with the options lib/constructs/function.ts gives NodejsFunction, then imported alone in a fresh Node 22
 * process with its function's environment from the synthesized template (tokens replaced by local
 * values). Shared by the bundle test (test/infra/bundles.test.ts) and `npm run bench -- bundles`.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { BUNDLING_BANNER } from '../../lib/constructs/function.ts';
import { fakeResolve, synth } from '../infra/synth.ts';
import type { Intrinsic, Resource } from '../infra/synth.ts';

/** One deployed function: its name in the stack, its entry file and its environment as the template sets it. */
export interface DeployedFunction {
  name: string;
  entry: string;
  env: Record<string, string>;
}

const PSEUDO: Readonly<Record<string, string>> = { 'AWS::Region': 'eu-west-1', 'AWS::URLSuffix': 'amazonaws.com', 'AWS::AccountId': '123456789012', 'AWS::Partition': 'aws' };

/** A template value as a local stand-in: pseudo parameters by their usual values, an HTTP API by an id, the rest as {@link fakeResolve} does. */
function localValue(value: Intrinsic, resources: Record<string, Resource>): string {
  if (typeof value === 'string') return value;
  if ('Ref' in value) {
    const pseudo = PSEUDO[value.Ref];
    if (pseudo) return pseudo;
    if (resources[value.Ref]?.Type === 'AWS::ApiGatewayV2::Api') return 'api0123456';
    if (resources[value.Ref]?.Type === 'AWS::SecretsManager::Secret') return `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${value.Ref}`;
    if (resources[value.Ref]?.Type === 'AWS::DynamoDB::GlobalTable' || resources[value.Ref]?.Type === 'AWS::DynamoDB::Table') return value.Ref;
    return fakeResolve(value);
  }
  if ('Fn::GetAtt' in value && value['Fn::GetAtt'][1] === 'ApiEndpoint') return 'https://api0123456.execute-api.eu-west-1.amazonaws.com';
  if ('Fn::Join' in value) return value['Fn::Join'][1].map((part) => localValue(part, resources)).join(value['Fn::Join'][0]);
  return fakeResolve(value);
}

/** Every function of the stack with its entry and its environment (synthesized without bundling: fast). */
export function deployedFunctions(): DeployedFunction[] {
  const s = synth();
  return Object.entries(s.stack.functions).map(([name, fn]) => {
    const entry = s.stack.entries[fn.node.path];
    if (!entry) throw new Error(`no entry recorded for ${fn.node.path}`);
    const env = Object.fromEntries(Object.entries(s.envOf(s.idOf(fn))).map(([key, value]) => [key, localValue(value, s.resources)]));
    return { name, entry, env };
  });
}

export interface BuiltBundle {
  /** The bundle file (index.mjs). */
  file: string;
  /** Bytes of every file of the asset except source maps. */
  bytes: number;
  /** The largest inputs, by package (node_modules) or by functions/ folder, in bytes of output. */
  largest: { name: string; bytes: number }[];
}

/** Bundles `entry` (relative to `root`) into `outdir` as NodejsFunction does (ESM, minified, source map, the require banner). */
export async function buildBundle(root: string, entry: string, outdir: string): Promise<BuiltBundle> {
  mkdirSync(outdir, { recursive: true });
  const file = join(outdir, 'index.mjs');
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [join(root, entry)],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    minify: true,
    sourcemap: true,
    mainFields: ['module', 'main'],
    banner: { js: BUNDLING_BANNER },
    outfile: file,
    metafile: true,
    logLevel: 'error',
  });
  const bytes = readdirSync(outdir)
    .filter((f) => !f.endsWith('.map'))
    .reduce((sum, f) => sum + statSync(join(outdir, f)).size, 0);
  const byPart = new Map<string, number>();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const [path, input] of Object.entries(output.inputs)) {
      const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1];
      const name = pkg ?? relative(root, join(root, path)).split('/').slice(0, 2).join('/');
      byPart.set(name, (byPart.get(name) ?? 0) + input.bytesInOutput);
    }
  }
  const largest = [...byPart.entries()].map(([name, b]) => ({ name, bytes: b })).sort((a, b) => b.bytes - a.bytes);
  return { file, bytes, largest };
}

/** A request that reached a stand-in: the service (from the endpoint variable) and its X-Amz-Target or path. */
export interface StandInRequest {
  service: string;
  operation: string;
}

/**
 * Small HTTP stand-ins for the AWS services a function may call while it loads: Secrets Manager answers
 * GetSecretValue with a Standard Webhooks secret; every other request is recorded and answered 400, so a
 * function that calls anything unexpected at load fails loudly.
 */
export async function startStandIns(): Promise<{ env: Record<string, string>; requests: StandInRequest[]; close(): Promise<void> }> {
  const requests: StandInRequest[] = [];
  const servers: Server[] = [];
  const env: Record<string, string> = {};
  const services: Record<string, (operation: string) => { status: number; body: unknown }> = {
    SECRETS_MANAGER: (operation) =>
      operation === 'secretsmanager.GetSecretValue' ? { status: 200, body: { ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:x', Name: 'x', SecretString: `whsec_${Buffer.alloc(24, 7).toString('base64')}` } } : { status: 400, body: { __type: 'UnexpectedOperation' } },
    DYNAMODB: () => ({ status: 400, body: { __type: 'UnexpectedOperation' } }),
    SQS: () => ({ status: 400, body: { __type: 'UnexpectedOperation' } }),
    SCHEDULER: () => ({ status: 400, body: { __type: 'UnexpectedOperation' } }),
    SESV2: () => ({ status: 400, body: { __type: 'UnexpectedOperation' } }),
    KMS: () => ({ status: 400, body: { __type: 'UnexpectedOperation' } }),
  };
  for (const [service, answer] of Object.entries(services)) {
    const server = createServer((req, res) => {
      const operation = String(req.headers['x-amz-target'] ?? `${req.method} ${req.url}`);
      requests.push({ service, operation });
      req.resume();
      req.on('end', () => {
        const a = answer(operation);
        res.writeHead(a.status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(a.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    env[`AWS_ENDPOINT_URL_${service}`] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }
  return {
    env,
    requests,
    close: async () => {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}

/** What Lambda's environment gives every function, with local credentials (nothing reaches AWS). */
export const LAMBDA_BASE_ENV = {
  AWS_REGION: 'eu-west-1',
  AWS_DEFAULT_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_SESSION_TOKEN: 'local',
  AWS_LAMBDA_FUNCTION_NAME: 'bundle-test',
  LOG_LEVEL: 'ERROR',
  POWERTOOLS_DEV: 'false',
} as const;

/** The result of importing a bundle in a fresh process. */
export interface ColdImport {
  ok: boolean;
  /** Milliseconds the `import()` took inside the process (Node's own start excluded). */
  importMs: number;
  /** Whether the module exports a `handler` function. */
  hasHandler: boolean;
  stderr: string;
}

/** Imports `file` alone in a fresh Node process (the running Node 22) with exactly `env`, and times the import. */
export function coldImport(file: string, env: Record<string, string>): Promise<ColdImport> {
  const script = `
    process.on('unhandledRejection', (e) => { console.error('unhandled rejection', e); process.exit(3); });
    const started = performance.now();
    const mod = await import(${JSON.stringify(pathToFileURL(file).href)});
    const importMs = performance.now() - started;
    console.log(JSON.stringify({ importMs, hasHandler: typeof mod.handler === 'function' }));
    process.exit(0);`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').pop() ?? '';
      try {
        const parsed = JSON.parse(line) as { importMs: number; hasHandler: boolean };
        resolve({ ok: code === 0, importMs: parsed.importMs, hasHandler: parsed.hasHandler, stderr });
      } catch {
        resolve({ ok: false, importMs: Number.NaN, hasHandler: false, stderr: `${stderr}\nexit ${String(code)}: ${stdout}` });
      }
    });
  });
}
