import { Duration, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** The first line of every bundle: CommonJS dependencies inside an ES module bundle still call require() for Node built-ins. */
export const BUNDLING_BANNER = "import { createRequire as __redialCreateRequire } from 'node:module'; const require = __redialCreateRequire(import.meta.url);";

/**
 * Modules every bundle takes from a module of ours (esbuild `alias`; paths relative to the project root,
 * where CDK runs esbuild). The bundle test builds with the same map (test/support/lambda-bundles.ts), so
 * what it runs is what is deployed.
 *
 * - `semver`: the X-Ray SDK requires it whole for one `gte` in a patcher redial never calls;
 *   functions/platform/semver-gte.ts is that `gte` (≈ 28 KB less in every bundle).
 * - `node:http`: imported as an ES module it makes Node load its own undici at cold start;
 *   functions/platform/node-http.cts hands over the same module through require(), which does not.
 * - `@aws-sdk/credential-provider-node`: the SDK's default credential chain, whose first link (the
 *   environment) is where Lambda puts the role's credentials; functions/platform/lambda-credentials.ts is
 *   that link alone (≈ 110 KB less in every bundle: the chain's STS, SSO and sign-in clients).
 */
export const BUNDLING_ALIASES: Readonly<Record<string, string>> = {
  semver: './functions/platform/semver-gte.ts',
  'node:http': './functions/platform/node-http.cts',
  '@aws-sdk/credential-provider-node': './functions/platform/lambda-credentials.ts',
};

/** Properties of a {@link RedialFunction}. */
export interface RedialFunctionProps {
  /** The TypeScript file that exports `handler`. */
  readonly entry: string;
  /** What the function is for, shown in the Lambda console. */
  readonly description: string;
  /** @default Duration.seconds(30) */
  readonly timeout?: Duration;
  /** @default 512 */
  readonly memorySize?: number;
  /** @default {} */
  readonly environment?: Record<string, string>;
  /** How long the function's log group keeps its events. @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Lambda's own retries of an asynchronous invocation. Only the job layer retries, so nothing else may
   * quietly run a handler again.
   *
   * @default 0
   */
  readonly asyncRetryAttempts?: number;
  /**
   * Concurrency reserved for this function, and its ceiling: a flood on it cannot take more of the
   * account's concurrency than this, and it always has this much.
   *
   * @default - none: the function draws on the account's unreserved pool
   */
  readonly reservedConcurrentExecutions?: number;
}

/**
 * A redial Lambda function: Node.js 22 on ARM, bundled by the local esbuild (no Docker), with its own log
 * group and retention, and a role that may write to that log group and nothing else until grants add to it.
 */
export class RedialFunction extends Construct {
  readonly function: NodejsFunction;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;

  constructor(scope: Construct, id: string, props: RedialFunctionProps) {
    super(scope, id);
    this.logGroup = new logs.LogGroup(this, 'Logs', { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH });
    // Our own role instead of AWSLambdaBasicExecutionRole: writing to this function's log group is all it needs.
    this.role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: props.description,
    });
    this.logGroup.grantWrite(this.role);

    this.function = new NodejsFunction(this, 'Function', {
      entry: props.entry,
      handler: 'handler',
      description: props.description,
      runtime: lambda.Runtime.NODEJS_22_X,
      architecture: lambda.Architecture.ARM_64,
      timeout: props.timeout ?? Duration.seconds(30),
      memorySize: props.memorySize ?? 512,
      role: this.role,
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      // No NODE_OPTIONS=--enable-source-maps: Node would read and parse the bundle's source map on every cold
      // start (a third of the import, docs/benchmarks.md "Lambda bundles"). Stack traces in the logs point
      // into index.mjs; `npm run map-stack-trace` maps them to the TypeScript sources with the asset's map.
      environment: props.environment ?? {},
      retryAttempts: props.asyncRetryAttempts ?? 0,
      ...(props.reservedConcurrentExecutions !== undefined ? { reservedConcurrentExecutions: props.reservedConcurrentExecutions } : {}),
      // Every invocation is traced (X-Ray), so one intake result can be followed through fanout and delivery.
      tracing: lambda.Tracing.ACTIVE,
      bundling: {
        forceDockerBundling: false,
        format: OutputFormat.ESM,
        // The AWS SDK is bundled, not taken from the runtime: the clients run the versions the tests ran.
        externalModules: [],
        mainFields: ['module', 'main'],
        banner: BUNDLING_BANNER,
        // `--alias:semver=./functions/…` on esbuild's command line (CDK's esbuildArgs form of `alias`).
        esbuildArgs: Object.fromEntries(Object.entries(BUNDLING_ALIASES).map(([pkg, path]) => [`--alias:${pkg}`, path])),
        minify: true,
        // The map ships in the asset for mapping traces; positions only, without the sources' text (a third its size).
        sourceMap: true,
        sourcesContent: false,
      },
    });

    // Active tracing adds the X-Ray writes to the role; X-Ray has no resource to scope them to.
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'xray:PutTraceSegments and xray:PutTelemetryRecords (added by active tracing) support no resource-level permissions; they write this function’s traces only.',
    });
    Validations.of(this.function).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Node.js 22 is the runtime redial is built and tested on (the local stack and every test run on the node@22 devDependency, package.json); moving to a newer runtime is a deliberate upgrade, not a default.',
    });
  }
}
