/**
 * The deployed functions' bundles, built and loaded as Lambda loads them: each entry bundled by esbuild
 * with the options lib/constructs/function.ts gives NodejsFunction, then imported alone in a fresh Node 22
 * process with its function's environment from the synthesized template (tokens replaced by local
 * values). Shared by the bundle test (test/infra/bundles.test.ts) and `npm run bench -- bundles`.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import { createServer, request as httpRequest } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { BUNDLING_ALIASES, BUNDLING_BANNER } from '../../lib/constructs/function.ts';
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
  /** For each alias (the module it replaces), the files that import it, relative to the root: what the module of ours must serve. */
  aliasImporters: Record<string, string[]>;
}

/** How a bundle differs from today's deployed ones (an older checkout was bundled differently). */
export interface BundleOptions {
  /** esbuild aliases. @default BUNDLING_ALIASES (lib/constructs/function.ts) */
  aliases?: Readonly<Record<string, string>>;
  /** Whether the source map carries the sources' text. @default false, as deployed */
  sourcesContent?: boolean;
}

/** Bundles `entry` (relative to `root`) into `outdir` as NodejsFunction does (ESM, minified, source map, the require banner, the aliases), unless `options` say otherwise. */
export async function buildBundle(root: string, entry: string, outdir: string, options: BundleOptions = {}): Promise<BuiltBundle> {
  const { aliases = BUNDLING_ALIASES, sourcesContent = false } = options;
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
    sourcesContent,
    mainFields: ['module', 'main'],
    banner: { js: BUNDLING_BANNER },
    alias: { ...aliases },
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
  const aliasImporters: Record<string, string[]> = Object.fromEntries(Object.keys(aliases).map((name) => [name, []]));
  for (const [path, input] of Object.entries(result.metafile.inputs)) {
    for (const imported of input.imports) {
      if (imported.original !== undefined && imported.original in aliasImporters) aliasImporters[imported.original]!.push(path);
    }
  }
  return { file, bytes, largest, aliasImporters };
}

/**
 * A request that reached a stand-in: the service (from the endpoint variable), its X-Amz-Target or method
 * and path, and what the IAM check needs to know which resource it acts on (test/infra/iam/stand-ins.ts):
 * the path with its query (a REST API names its resource there) and the body (parsed when it is JSON).
 */
export interface StandInRequest {
  service: string;
  operation: string;
  url: string;
  body: unknown;
}

/** What the KMS stand-in puts before a plaintext to make its "ciphertext" (and what it refuses to decrypt without). */
const KMS_SEAL = Buffer.from('kms-stand-in:');

type Answer = { status: number; body: unknown } | 'forward';
const unexpected = { status: 400, body: { __type: 'UnexpectedOperation' } };

/**
 * Small HTTP stand-ins for the AWS services a function calls, one server each, every request recorded:
 * Secrets Manager answers GetSecretValue with a Standard Webhooks secret ({@link STAND_IN_WEBHOOK_SECRET});
 * SQS answers SendMessage (with the body's MD5, which the client checks); Scheduler answers CreateSchedule
 * and DeleteSchedule; SES v2 answers SendEmail; KMS answers Encrypt and Decrypt (a reversible seal, see
 * {@link KMS_SEAL}); DynamoDB requests go on to `dynamoEndpoint` (DynamoDB Local) when one is given.
 * Every other request is answered 400, so a function that calls anything unexpected fails loudly.
 */
export async function startStandIns(options: { dynamoEndpoint?: string } = {}): Promise<{ env: Record<string, string>; ports: number[]; requests: StandInRequest[]; close(): Promise<void> }> {
  const requests: StandInRequest[] = [];
  const servers: Server[] = [];
  const env: Record<string, string> = {};
  const ports: number[] = [];
  const services: Record<string, (operation: string, body: string) => Answer> = {
    SECRETS_MANAGER: (operation) =>
      operation === 'secretsmanager.GetSecretValue' ? { status: 200, body: { ARN: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:x', Name: 'x', SecretString: STAND_IN_WEBHOOK_SECRET } } : unexpected,
    DYNAMODB: () => (options.dynamoEndpoint ? 'forward' : unexpected),
    SQS: (operation, body) => {
      if (operation !== 'AmazonSQS.SendMessage') return unexpected;
      const message = (JSON.parse(body) as { MessageBody: string }).MessageBody;
      return { status: 200, body: { MessageId: randomUUID(), MD5OfMessageBody: createHash('md5').update(message).digest('hex') } };
    },
    SCHEDULER: (operation) => {
      if (operation.startsWith('POST /schedules/')) return { status: 200, body: { ScheduleArn: 'arn:aws:scheduler:eu-west-1:123456789012:schedule/default/x' } };
      if (operation.startsWith('DELETE /schedules/')) return { status: 200, body: {} };
      return unexpected;
    },
    SESV2: (operation) => (operation === 'POST /v2/email/outbound-emails' ? { status: 200, body: { MessageId: `stand-in-${randomUUID()}` } } : unexpected),
    KMS: (operation, body) => {
      if (operation !== 'TrentService.Encrypt' && operation !== 'TrentService.Decrypt') return unexpected;
      // A reversible seal, not encryption: enough for the code to store a ciphertext and read it back.
      const input = JSON.parse(body) as { KeyId: string; Plaintext?: string; CiphertextBlob?: string };
      if (operation === 'TrentService.Encrypt') {
        return { status: 200, body: { KeyId: input.KeyId, CiphertextBlob: Buffer.concat([KMS_SEAL, Buffer.from(input.Plaintext ?? '', 'base64')]).toString('base64') } };
      }
      const sealed = Buffer.from(input.CiphertextBlob ?? '', 'base64');
      if (!sealed.subarray(0, KMS_SEAL.length).equals(KMS_SEAL)) return { status: 400, body: { __type: 'InvalidCiphertextException' } };
      return { status: 200, body: { KeyId: input.KeyId, Plaintext: sealed.subarray(KMS_SEAL.length).toString('base64') } };
    },
  };
  for (const [service, answer] of Object.entries(services)) {
    const server = createServer((req, res) => {
      const operation = String(req.headers['x-amz-target'] ?? `${req.method} ${(req.url ?? '').split('?')[0]}`);
      // Recorded on arrival, in order; the body is filled in once it has been read, before any answer.
      const recorded: StandInRequest = { service, operation, url: req.url ?? '', body: undefined };
      requests.push(recorded);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        recorded.body = parsedBody(body.toString('utf8'));
        const a = answer(operation, body.toString('utf8'));
        if (a === 'forward') {
          const target = new URL(options.dynamoEndpoint!);
          const headers = { ...req.headers, host: target.host };
          const out = httpRequest({ hostname: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answered) => {
            res.writeHead(answered.statusCode ?? 500, answered.headers);
            answered.pipe(res);
          });
          out.on('error', (e) => res.destroy(e));
          out.end(body);
          return;
        }
        res.writeHead(a.status, { 'content-type': 'application/x-amz-json-1.1' });
        res.end(JSON.stringify(a.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    const port = (server.address() as AddressInfo).port;
    ports.push(port);
    env[`AWS_ENDPOINT_URL_${service}`] = `http://127.0.0.1:${port}`;
  }
  return {
    env,
    ports,
    requests,
    close: async () => {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    },
  };
}

/** A request body as JSON when it is JSON (every service here but a bodiless DELETE), else its text. */
function parsedBody(text: string): unknown {
  if (text === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The call-result signing secret the Secrets Manager stand-in gives the intake. */
export const STAND_IN_WEBHOOK_SECRET = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;

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
  return runModuleScript<{ importMs: number; hasHandler: boolean }>(script, env).then(({ code, parsed, stdout, stderr }) =>
    parsed ? { ok: code === 0, importMs: parsed.importMs, hasHandler: parsed.hasHandler, stderr } : { ok: false, importMs: Number.NaN, hasHandler: false, stderr: `${stderr}\nexit ${String(code)}: ${stdout}` },
  );
}

/** Runs an ES module `script` in a fresh Node process (the running Node 22) with exactly `env`: its exit code, output, and last stdout line parsed as JSON. */
function runModuleScript<T>(script: string, env: Record<string, string>): Promise<{ code: number | null; parsed?: T; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').pop() ?? '';
      try {
        resolve({ code, parsed: JSON.parse(line) as T, stdout, stderr });
      } catch {
        resolve({ code, stdout, stderr });
      }
    });
  });
}

/** What one invocation in {@link coldInvoke} answered: the handler's result, or the error it threw. */
export interface Invocation {
  result?: unknown;
  error?: string;
}

/** The result of importing a bundle in a fresh process and invoking its handler with each event in turn. */
export interface ColdInvoke {
  ok: boolean;
  invocations: Invocation[];
  /** Every outbound connection the process tried to a port it was not given (refused there, as `host:port`). */
  refused: string[];
  /** Whether Node's own undici (its fetch) was loaded once the import was done, before any invocation. */
  undiciAtImport: boolean;
  stderr: string;
}

/**
 * Imports `file` alone in a fresh Node process with exactly `env`, then calls its `handler` with each of
 * `events` in turn (a Lambda context each, as the runtime gives one), warm after the first. Before the
 * import, the process refuses every TCP connection and UDP send to anything but `allowedPorts` on
 * 127.0.0.1 (the stand-ins and DynamoDB Local): a function that reaches for AWS, the internet or X-Ray's
 * daemon fails its request and is listed in `refused`. An unhandled rejection ends the process (not ok).
 */
export function coldInvoke(file: string, env: Record<string, string>, events: readonly unknown[], allowedPorts: readonly number[]): Promise<ColdInvoke> {
  const script = `
    import net from 'node:net';
    import dgram from 'node:dgram';
    const allowed = new Set(${JSON.stringify(allowedPorts)});
    const refused = [];
    const connect = net.Socket.prototype.connect;
    net.Socket.prototype.connect = function (...args) {
      const options = typeof args[0] === 'object' && args[0] !== null ? (Array.isArray(args[0]) ? args[0][0] : args[0]) : { port: args[0], host: args[1] };
      // An IPC socket has a path and no port (an HTTP agent's options carry the request's path beside a port).
      const ipc = options.port === undefined && options.path !== undefined;
      const host = options.host ?? 'localhost';
      const port = Number(options.port);
      if (ipc || !allowed.has(port) || !['127.0.0.1', 'localhost', '::1'].includes(host)) {
        const where = ipc ? options.path : host + ':' + port;
        refused.push(where);
        throw new Error('bundle test: connection to ' + where + ' refused (not a stand-in)');
      }
      return connect.apply(this, args);
    };
    const send = dgram.Socket.prototype.send;
    dgram.Socket.prototype.send = function (...args) {
      refused.push('udp');
      throw new Error('bundle test: UDP send refused');
    };
    process.on('unhandledRejection', (e) => { console.error('unhandled rejection', e); process.exit(3); });
    const mod = await import(${JSON.stringify(pathToFileURL(file).href)});
    const undiciAtImport = process.moduleLoadList.some((m) => m.includes('undici'));
    const invocations = [];
    let n = 0;
    for (const event of ${JSON.stringify(events)}) {
      n++;
      const context = {
        functionName: process.env.AWS_LAMBDA_FUNCTION_NAME, functionVersion: '$LATEST', invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:bundle-test',
        memoryLimitInMB: '512', awsRequestId: 'req-' + n, logGroupName: '/aws/lambda/bundle-test', logStreamName: 'stream', callbackWaitsForEmptyEventLoop: true,
        getRemainingTimeInMillis: () => 30000, done() {}, fail() {}, succeed() {},
      };
      try {
        invocations.push({ result: await mod.handler(event, context) });
      } catch (e) {
        invocations.push({ error: String(e && e.stack || e) });
      }
    }
    console.log(JSON.stringify({ invocations, refused, undiciAtImport }));
    process.exit(0);`;
  return runModuleScript<{ invocations: Invocation[]; refused: string[]; undiciAtImport: boolean }>(script, env).then(({ code, parsed, stdout, stderr }) =>
    parsed
      ? { ok: code === 0, invocations: parsed.invocations, refused: parsed.refused, undiciAtImport: parsed.undiciAtImport, stderr }
      : { ok: false, invocations: [], refused: [], undiciAtImport: false, stderr: `${stderr}\nexit ${String(code)}: ${stdout}` },
  );
}
