/**
 * The retry-owner gate (README, docs/job-layer.md): retry logic lives in functions/jobs and nowhere else. It parses every
 * source file under `functions/` and `bin/` with the TypeScript compiler and reports retry libraries,
 * "try again" code, outbound clients built outside functions/platform, and clients whose own retries are on.
 * It reads syntax, not text, so a comment or a string that mentions `p-retry` or `fetch(` is not a finding.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';

// ─── What the gate looks for ─────────────────────────────────────────────────────────────────────────

/** Folders scanned, relative to the root. test/ and bench/ are not scanned. */
const SCANNED_FOLDERS = ['functions', 'bin'];

const SCRIPT_KINDS: Readonly<Record<string, ts.ScriptKind>> = {
  '.ts': ts.ScriptKind.TS,
  '.mts': ts.ScriptKind.TS,
  '.cts': ts.ScriptKind.TS,
  '.tsx': ts.ScriptKind.TSX,
  '.js': ts.ScriptKind.JS,
  '.mjs': ts.ScriptKind.JS,
  '.cjs': ts.ScriptKind.JS,
  '.jsx': ts.ScriptKind.JSX,
};

/** The one owner of retries: nothing under it is checked. */
const RETRY_OWNER = 'functions/jobs/';

/** The one place that builds outbound clients, each with its own retries off. */
const CLIENT_OWNER = 'functions/platform/';

/** Packages that retry, or clients that retry by default. A subpath (`axios/unsafe/...`) counts too. */
const RETRY_LIBRARIES = [
  'p-retry',
  'async-retry',
  'promise-retry',
  'retry',
  'exponential-backoff',
  'axios-retry',
  'fetch-retry',
  'cockatiel',
  '@lifeomic/attempt',
  'ts-retry-promise',
  'retry-axios',
  'got',
  'axios',
  'node-fetch',
  'superagent',
  'ky',
  'request',
  // Not retry libraries as such, same reason: the AWS SDK v2 retries by default (maxRetries), and these
  // build the retry strategies that a v3 client's `retryStrategy` option takes.
  'aws-sdk',
  '@smithy/util-retry',
  '@aws-sdk/util-retry',
  // Google's Node clients retry by default, each in its own way, so the calendar provider is hand-built over
  // platform/outbound.ts instead (functions/calendar/google.ts): googleapis (through googleapis-common) sets
  // `retry: true` on every request, and gaxios then re-sends GET, HEAD, PUT, OPTIONS and DELETE on 408, 429
  // and 5xx, and on no answer at all; google-auth-library sends its token POSTs with a retry config that
  // includes POST (OAuth2Client.RETRY_CONFIG), and re-sends a request once after refreshing its token on a
  // 401/403 (requestAsync's reAuthRetried); @googleapis/calendar is googleapis' calendar alone, same stack.
  'googleapis',
  'googleapis-common',
  '@googleapis/calendar',
  'gaxios',
  'google-auth-library',
];

/** undici's retrying pieces, as export paths; the rest of undici is an outbound client (below). */
const UNDICI_RETRY_EXPORTS = [['RetryAgent'], ['RetryHandler'], ['interceptors', 'retry']];

/** Functions that send a request or build a client, by module (`node:` prefix dropped). */
const OUTBOUND_FUNCTIONS: Readonly<Record<string, readonly string[]>> = {
  http: ['request', 'get'],
  https: ['request', 'get'],
  http2: ['connect'],
  nodemailer: ['createTransport'],
  undici: ['request', 'fetch', 'stream', 'pipeline', 'connect', 'upgrade'],
};

/** Classes whose instances send requests, by module. AWS SDK clients are recognised by name instead. */
const OUTBOUND_CLASSES: Readonly<Record<string, readonly string[]>> = {
  undici: ['Agent', 'Pool', 'Client', 'BalancedPool', 'ProxyAgent', 'EnvHttpProxyAgent', 'RetryAgent'],
};

/** AWS SDK v3 clients that do not end in `Client`; aggregated clients (`new SQS()`) are found by rule. */
const SDK_CLIENTS_WITHOUT_SUFFIX = ['DynamoDBDocument'];

/** Options that turn a client's own retries on unless their value is one of these literals. */
const RETRY_OPTIONS = ['maxAttempts', 'maxRetries', 'retries', 'retry'];
const RETRIES_OFF_VALUES = ['0', '1', 'false'] as const;

/** Options that replace an SDK client's retry policy whatever `maxAttempts` says. */
const RETRY_STRATEGY_OPTIONS = ['retryStrategy'];

/** Names through which the global `fetch` and timers are reached besides the bare name. */
const GLOBAL_OBJECTS = ['globalThis', 'global', 'window', 'self'];

/** Timer functions: global, or imported from these modules. */
const TIMER_FUNCTIONS = ['setTimeout', 'setInterval'];
const TIMER_MODULES = ['timers', 'timers/promises'];

/** Methods that arm a timer on redial's own clock (`TimerClock.setTimer` in functions/platform/clock.ts). */
const TIMER_METHODS = ['setTimer'];

// ─── Public surface ──────────────────────────────────────────────────────────────────────────────────

/** Every rule the gate enforces. */
export const RULES = ['retry-library', 'retry-loop', 'unowned-client', 'client-retries-on'] as const;

/** A rule's name. */
export type Rule = (typeof RULES)[number];

/** What each rule forbids, one line each (printed by `npm run gate`). */
export const RULE_DESCRIPTIONS: Readonly<Record<Rule, string>> = {
  'retry-library': 'a retry library, or a client that retries by default, imported outside functions/jobs',
  'retry-loop': 'a loop, recursion or timer that tries again after a failure, outside functions/jobs',
  'unowned-client': 'an outbound client (AWS SDK, HTTP, SMTP) built outside functions/platform',
  'client-retries-on': 'an outbound client with its own retries on (AWS SDK clients need maxAttempts: 1)',
};

/** One finding: where (root-relative path with `/`, 1-based line), which rule, and what was seen. */
export interface Violation {
  file: string;
  line: number;
  rule: Rule;
  message: string;
}

/**
 * A reviewed exception: one rule, inside one named function of one file, and why it is not a retry that
 * the job layer should own. Keep the list short; `findUnusedExemptions` reports entries that no longer apply.
 */
export interface Exemption {
  file: string;
  functionName: string;
  rule: Rule;
  reason: string;
}

/** The reviewed exceptions. */
export const EXEMPTIONS: readonly Exemption[] = [
  {
    file: 'functions/platform/local/dynamodb-local.ts',
    functionName: 'startDynamoDbLocal',
    rule: 'retry-loop',
    reason:
      'a start-up readiness poll: it waits, up to startTimeoutMs, for the DynamoDB Local process it has just ' +
      'spawned to accept connections, before any job layer exists; no request is re-sent on a caller\'s behalf',
  },
];

/** Options for {@link checkRetryOwnership}. */
export interface GateOptions {
  /** The reviewed exceptions to apply. @default EXEMPTIONS */
  exemptions?: readonly Exemption[];
}

/**
 * Checks that retry logic lives only in functions/jobs and that every outbound client is built by
 * functions/platform with its own retries off. Returns the violations sorted by file and line.
 *
 * @example
 * ```ts
 * const violations = checkRetryOwnership(process.cwd());
 * for (const v of violations) console.log(`${v.file}:${v.line} ${v.rule} ${v.message}`);
 * ```
 */
export function checkRetryOwnership(rootDir: string, options: GateOptions = {}): Violation[] {
  return scan(rootDir, options.exemptions ?? EXEMPTIONS).violations;
}

/** The exemptions that suppressed nothing: the code they excused is gone, so they should go too. */
export function findUnusedExemptions(rootDir: string, exemptions: readonly Exemption[] = EXEMPTIONS): Exemption[] {
  const { used } = scan(rootDir, exemptions);
  return exemptions.filter((exemption) => !used.has(exemption));
}

// ─── Driver ──────────────────────────────────────────────────────────────────────────────────────────

interface Finding {
  node: ts.Node;
  rule: Rule;
  message: string;
}

/** A parsed file and what its names are bound to. */
interface SourceContext {
  file: string;
  source: ts.SourceFile;
  bindings: Map<string, ModuleRef>;
  localNames: Set<string>;
}

function scan(rootDir: string, exemptions: readonly Exemption[]): { violations: Violation[]; used: Set<Exemption> } {
  const violations: Violation[] = [];
  const used = new Set<Exemption>();
  for (const file of sourceFiles(rootDir)) {
    // The job layer may retry, but it builds no client of its own either: that is platform's, retries off.
    const retryOwner = file.startsWith(RETRY_OWNER);
    const ctx = parse(rootDir, file);
    const findings = [
      ...(retryOwner ? [] : findRetryLibraries(ctx)),
      ...(retryOwner ? [] : findRetryLoops(ctx)),
      ...(file.startsWith(CLIENT_OWNER) ? [] : findUnownedClients(ctx)),
      ...findClientRetriesOn(ctx),
    ];
    for (const { node, rule, message } of findings) {
      const functionName = enclosingFunction(node)?.name;
      const exemption = exemptions.find((e) => e.file === file && e.rule === rule && e.functionName === functionName);
      if (exemption) used.add(exemption);
      else violations.push({ file, line: lineOf(ctx.source, node), rule, message });
    }
  }
  violations.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.rule.localeCompare(b.rule));
  return { violations, used };
}

/** Root-relative paths (with `/`) of every source file under the scanned folders, node_modules skipped. */
function sourceFiles(rootDir: string): string[] {
  const files: string[] = [];
  const visitFolder = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== 'node_modules') visitFolder(path);
      else if (entry.isFile() && scriptKind(entry.name) !== undefined) files.push(relative(rootDir, path).split(sep).join('/'));
    }
  };
  for (const folder of SCANNED_FOLDERS) {
    if (existsSync(join(rootDir, folder))) visitFolder(join(rootDir, folder));
  }
  return files.sort();
}

function scriptKind(fileName: string): ts.ScriptKind | undefined {
  if (fileName.endsWith('.d.ts')) return undefined;
  const dot = fileName.lastIndexOf('.');
  return dot < 0 ? undefined : SCRIPT_KINDS[fileName.slice(dot)];
}

function parse(rootDir: string, file: string): SourceContext {
  const text = readFileSync(join(rootDir, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, scriptKind(file));
  return { file, source, bindings: collectBindings(source), localNames: collectLocalNames(source) };
}

// ─── Rule: retry-library ─────────────────────────────────────────────────────────────────────────────

function findRetryLibraries(ctx: SourceContext): Finding[] {
  const findings: Finding[] = [];
  walk(ctx.source, (node) => {
    const specifier = importedModule(node);
    if (specifier && RETRY_LIBRARIES.some((lib) => specifier.text === lib || specifier.text.startsWith(`${lib}/`))) {
      findings.push({ node: specifier, rule: 'retry-library', message: `imports "${specifier.text}"; only functions/jobs retries` });
    }
    // A named import (`import { RetryAgent } from 'undici'`) is reported once, at the import; a namespace
    // (`undici.RetryAgent`, `interceptors.retry`) where it is used.
    const ref = ts.isImportSpecifier(node) ? ctx.bindings.get(node.name.text) : ts.isPropertyAccessExpression(node) ? resolve(node, ctx) : undefined;
    if (ref?.module === 'undici' && UNDICI_RETRY_EXPORTS.some((path) => samePath(path, ref.path))) {
      findings.push({ node, rule: 'retry-library', message: `uses undici's ${ref.path.join('.')}; only functions/jobs retries` });
    }
  });
  return findings;
}

// ─── Rule: retry-loop ────────────────────────────────────────────────────────────────────────────────

function findRetryLoops(ctx: SourceContext): Finding[] {
  return [...findTryAgainLoops(ctx), ...findRecursiveRetries(ctx), ...findTimerRetries(ctx)];
}

/**
 * A loop whose try/catch goes round again after a failure (the catch falls through or continues) and
 * stops on success (the try returns, breaks out, or sets the loop's condition). A loop that goes round on
 * success too is processing items, not retrying one, and is not reported.
 */
function findTryAgainLoops(ctx: SourceContext): Finding[] {
  const findings: Finding[] = [];
  walk(ctx.source, (node) => {
    if (!ts.isTryStatement(node) || !node.catchClause) return;
    const loop = enclosingLoop(node);
    if (!loop || !catchGoesRound(node, loop) || !successLeavesLoop(node, loop)) return;
    findings.push({
      node: loop,
      rule: 'retry-loop',
      message: `loop tries again after the catch on line ${lineOf(ctx.source, node.catchClause)}; only functions/jobs retries`,
    });
  });
  return findings;
}

/** A function that calls itself from its own catch block or `.catch()` handler. */
function findRecursiveRetries(ctx: SourceContext): Finding[] {
  const findings: Finding[] = [];
  for (const handler of catchHandlers(ctx.source)) {
    const owner = enclosingFunction(handler.parent);
    if (!owner) continue;
    walk(handler, (node) => {
      if (ts.isCallExpression(node) && callsByName(node, owner.name)) {
        findings.push({ node, rule: 'retry-loop', message: `${owner.name} calls itself after a failure; only functions/jobs retries` });
      }
    });
  }
  return findings;
}

/** A timer armed in a catch block or `.catch()` handler: a retry by timer. */
function findTimerRetries(ctx: SourceContext): Finding[] {
  const findings: Finding[] = [];
  for (const handler of catchHandlers(ctx.source)) {
    walk(handler, (node) => {
      if (ts.isCallExpression(node) && isTimerCall(node, ctx)) {
        findings.push({ node, rule: 'retry-loop', message: 'arms a timer after a failure; only functions/jobs retries' });
      }
    });
  }
  return findings;
}

// ─── Rule: unowned-client ────────────────────────────────────────────────────────────────────────────

function findUnownedClients(ctx: SourceContext): Finding[] {
  return outboundSites(ctx).map(({ node, what }) => ({
    node,
    rule: 'unowned-client',
    message: `${what} outside functions/platform; use the clients it builds (aws.ts, outbound.ts)`,
  }));
}

// ─── Rule: client-retries-on ─────────────────────────────────────────────────────────────────────────

function findClientRetriesOn(ctx: SourceContext): Finding[] {
  const findings: Finding[] = [];
  for (const site of outboundSites(ctx)) {
    const judged = new Set<ts.Node>();
    if (site.sdkClient && ts.isNewExpression(site.node) && ctx.file.startsWith(CLIENT_OWNER)) {
      const options = site.node.arguments?.[0];
      const maxAttempts = options && ts.isObjectLiteralExpression(options) ? ownProperty(options, 'maxAttempts') : undefined;
      if (maxAttempts) judged.add(maxAttempts);
      if (!maxAttempts || !ts.isPropertyAssignment(maxAttempts) || !isLiteral(maxAttempts.initializer, '1')) {
        findings.push({ node: maxAttempts ?? site.node, rule: 'client-retries-on', message: `${site.what} must be built with { maxAttempts: 1 }` });
      }
    }
    for (const arg of site.node.arguments ?? []) {
      for (const property of retryProperties(arg)) {
        if (judged.has(property)) continue;
        findings.push({ node: property, rule: 'client-retries-on', message: `${site.what} sets ${propertyName(property)}: retries must stay off` });
      }
    }
  }
  return findings;
}

/** Retry options in an options object (nested objects included) whose value could turn retries on. */
function retryProperties(node: ts.Expression): ts.ObjectLiteralElementLike[] {
  if (!ts.isObjectLiteralExpression(node)) return [];
  return node.properties.flatMap((property) => {
    const name = propertyName(property);
    if (name !== undefined && RETRY_STRATEGY_OPTIONS.includes(name)) return [property];
    if (name !== undefined && RETRY_OPTIONS.includes(name)) {
      const off = ts.isPropertyAssignment(property) && RETRIES_OFF_VALUES.some((value) => isLiteral(property.initializer, value));
      return off ? [] : [property];
    }
    return ts.isPropertyAssignment(property) ? retryProperties(property.initializer) : [];
  });
}

// ─── Outbound clients ────────────────────────────────────────────────────────────────────────────────

interface OutboundSite {
  node: ts.NewExpression | ts.CallExpression;
  what: string;
  /** `new` of an AWS SDK client class, which must carry `maxAttempts: 1`. */
  sdkClient: boolean;
}

/** Every place a file builds an outbound client or sends a request without one. */
function outboundSites(ctx: SourceContext): OutboundSite[] {
  const sites: OutboundSite[] = [];
  walk(ctx.source, (node) => {
    if (!ts.isNewExpression(node) && !ts.isCallExpression(node)) return;
    if (ts.isCallExpression(node) && isGlobal(node.expression, 'fetch', ctx)) {
      sites.push({ node, what: 'global fetch()', sdkClient: false });
      return;
    }
    const ref = resolve(node.expression, ctx);
    if (!ref) return;
    const [first, second] = ref.path;
    if (ts.isNewExpression(node)) {
      if (ref.path.length === 1 && isSdkClient(ref.module, first!)) sites.push({ node, what: `new ${first}`, sdkClient: true });
      else if (ref.path.length === 1 && OUTBOUND_CLASSES[ref.module]?.includes(first!)) sites.push({ node, what: `new ${ref.module}.${first}`, sdkClient: false });
    } else if (ref.path.length === 2 && second === 'from' && isSdkClient(ref.module, first!)) {
      sites.push({ node, what: `${first}.from()`, sdkClient: false });
    } else if (ref.path.length === 1 && OUTBOUND_FUNCTIONS[ref.module]?.includes(first!)) {
      sites.push({ node, what: `${ref.module}.${first}()`, sdkClient: false });
    }
  });
  return sites;
}

/** Whether an `@aws-sdk/*` export is a client class: `XxxClient`, or an aggregated client (`SQS`). */
function isSdkClient(module: string, name: string): boolean {
  if (!module.startsWith('@aws-sdk/')) return false;
  if (name.endsWith('Client') || SDK_CLIENTS_WITHOUT_SUFFIX.includes(name)) return true;
  return module.startsWith('@aws-sdk/client-') && /^[A-Z]/.test(name) && !/(Command|Exception|Error)$/.test(name);
}

// ─── Control flow, for the try-again loop ────────────────────────────────────────────────────────────

type Loop = ts.IterationStatement;

/** The innermost loop around `node` in the same function. */
function enclosingLoop(node: ts.Node): Loop | undefined {
  for (let n = node.parent; n && !ts.isFunctionLike(n); n = n.parent) {
    if (ts.isIterationStatement(n, false)) return n;
  }
  return undefined;
}

/** After a failure, control reaches the loop's next iteration: the catch continues, or falls through. */
function catchGoesRound(statement: ts.TryStatement, loop: Loop): boolean {
  const block = statement.catchClause!.block;
  if (jumps(block).some((jump) => ts.isContinueStatement(jump) && jumpTarget(jump) === loop)) return true;
  if (!canCompleteNormally(block) || (statement.finallyBlock && !canCompleteNormally(statement.finallyBlock))) return false;
  return restOfIterationGoesRound(statement, loop);
}

/** On success the loop can stop: the try returns or breaks out, sets the loop's condition, or what follows it leaves. */
function successLeavesLoop(statement: ts.TryStatement, loop: Loop): boolean {
  const leaves = jumps(statement.tryBlock).some(
    (jump) => ts.isReturnStatement(jump) || (ts.isBreakStatement(jump) && contains(jumpTarget(jump), loop)),
  );
  return leaves || assignsConditionOf(statement.tryBlock, loop) || !restOfIterationGoesRound(statement, loop);
}

/** Whether the statements after `statement`, up to the end of the loop body, can carry on to the next iteration. */
function restOfIterationGoesRound(statement: ts.Statement, loop: Loop): boolean {
  for (let n: ts.Node = statement; n !== loop; n = n.parent) {
    for (const next of statementsAfter(n)) {
      if (jumps(next).some((jump) => ts.isContinueStatement(jump) && jumpTarget(jump) === loop)) return true;
      if (!canCompleteNormally(next)) return false;
    }
  }
  return true;
}

function statementsAfter(node: ts.Node): readonly ts.Statement[] {
  const parent = node.parent;
  if (!ts.isBlock(parent) && !ts.isCaseClause(parent) && !ts.isDefaultClause(parent)) return [];
  return parent.statements.slice(parent.statements.indexOf(node as ts.Statement) + 1);
}

/** Whether control can run off the end of `node` instead of leaving by return, throw, break or continue. */
function canCompleteNormally(node: ts.Statement): boolean {
  if (ts.isBlock(node)) return node.statements.every(canCompleteNormally);
  if (ts.isReturnStatement(node) || ts.isThrowStatement(node) || ts.isBreakStatement(node) || ts.isContinueStatement(node)) return false;
  if (ts.isIfStatement(node)) {
    return !node.elseStatement || canCompleteNormally(node.thenStatement) || canCompleteNormally(node.elseStatement);
  }
  if (ts.isTryStatement(node)) {
    const body = canCompleteNormally(node.tryBlock) || (node.catchClause !== undefined && canCompleteNormally(node.catchClause.block));
    return body && (!node.finallyBlock || canCompleteNormally(node.finallyBlock));
  }
  if (ts.isSwitchStatement(node)) {
    const clauses = node.caseBlock.clauses;
    const last = clauses.at(-1);
    const breaksOut = jumps(node.caseBlock).some((jump) => ts.isBreakStatement(jump) && jumpTarget(jump) === node);
    return breaksOut || !clauses.some(ts.isDefaultClause) || !last || last.statements.every(canCompleteNormally);
  }
  if (ts.isLabeledStatement(node)) {
    return canCompleteNormally(node.statement) || jumps(node.statement).some((jump) => ts.isBreakStatement(jump) && jumpTarget(jump) === node.statement);
  }
  return true; // expressions, declarations, and loops (which end when their condition fails)
}

/** return, break and continue statements in `node`, not counting those in nested functions. */
function jumps(node: ts.Node): (ts.ReturnStatement | ts.BreakOrContinueStatement)[] {
  const found: (ts.ReturnStatement | ts.BreakOrContinueStatement)[] = [];
  walk(node, (n) => {
    if (ts.isReturnStatement(n) || ts.isBreakOrContinueStatement(n)) found.push(n);
  }, { intoFunctions: false });
  return found;
}

/** The statement a break or continue leaves or restarts. */
function jumpTarget(jump: ts.BreakOrContinueStatement): ts.Node | undefined {
  for (let n = jump.parent; n && !ts.isFunctionLike(n); n = n.parent) {
    if (jump.label) {
      if (ts.isLabeledStatement(n) && n.label.text === jump.label.text) return n.statement;
    } else if (ts.isIterationStatement(n, false) || (ts.isBreakStatement(jump) && ts.isSwitchStatement(n))) {
      return n;
    }
  }
  return undefined;
}

/** Whether `block` assigns to a name that the loop's condition reads (`while (!done) { ...; done = true }`). */
function assignsConditionOf(block: ts.Block, loop: Loop): boolean {
  const condition = ts.isWhileStatement(loop) || ts.isDoStatement(loop) ? loop.expression : ts.isForStatement(loop) ? loop.condition : undefined;
  if (!condition) return false;
  const read = new Set<string>();
  walk(condition, (n) => {
    if (ts.isIdentifier(n)) read.add(n.text);
  });
  let assigns = false;
  walk(block, (n) => {
    const name = assignedName(n);
    if (name !== undefined && read.has(name)) assigns = true;
  }, { intoFunctions: false });
  return assigns;
}

/** The name that `x = …`, `x += …`, `x++` or `this.x = …` writes. */
function assignedName(node: ts.Node): string | undefined {
  let target: ts.Expression | undefined;
  if (ts.isBinaryExpression(node) && isAssignmentOperator(node.operatorToken.kind)) target = node.left;
  const isStep = (operator: ts.SyntaxKind) => operator === ts.SyntaxKind.PlusPlusToken || operator === ts.SyntaxKind.MinusMinusToken;
  if ((ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node)) && isStep(node.operator)) target = node.operand;
  if (!target) return undefined;
  if (ts.isIdentifier(target)) return target.text;
  return ts.isPropertyAccessExpression(target) ? target.name.text : undefined;
}

function isAssignmentOperator(kind: ts.SyntaxKind): boolean {
  return kind >= ts.SyntaxKind.FirstAssignment && kind <= ts.SyntaxKind.LastAssignment;
}

// ─── Catch handlers, functions and timers ────────────────────────────────────────────────────────────

/** Catch blocks, and inline functions passed to `.catch(fn)` or as `.then(_, fn)`; code runs after a failure in each. */
function catchHandlers(source: ts.SourceFile): ts.Node[] {
  const handlers: ts.Node[] = [];
  walk(source, (node) => {
    if (ts.isCatchClause(node)) handlers.push(node.block);
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text;
      const handler = method === 'catch' ? node.arguments[0] : method === 'then' ? node.arguments[1] : undefined;
      if (handler && (ts.isArrowFunction(handler) || ts.isFunctionExpression(handler))) handlers.push(handler);
    }
  });
  return handlers;
}

/** The innermost named function around `node`: a declaration, a method, or a function assigned to a name. */
function enclosingFunction(node: ts.Node): { name: string } | undefined {
  for (let n: ts.Node | undefined = node; n; n = n.parent) {
    if (!ts.isFunctionLike(n)) continue;
    const name = ownName(n) ?? (n.parent && (ts.isVariableDeclaration(n.parent) || ts.isPropertyAssignment(n.parent)) ? ownName(n.parent) : undefined);
    if (name !== undefined) return { name };
  }
  return undefined;
}

function ownName(node: ts.Node): string | undefined {
  const name = (node as { name?: ts.Node }).name;
  return name && (ts.isIdentifier(name) || ts.isPrivateIdentifier(name)) ? name.text : undefined;
}

/** `name(...)` or `this.name(...)`. */
function callsByName(call: ts.CallExpression, name: string): boolean {
  const callee = skipParentheses(call.expression);
  if (ts.isIdentifier(callee)) return callee.text === name;
  return ts.isPropertyAccessExpression(callee) && callee.expression.kind === ts.SyntaxKind.ThisKeyword && callee.name.text === name;
}

function isTimerCall(call: ts.CallExpression, ctx: SourceContext): boolean {
  const callee = skipParentheses(call.expression);
  if (TIMER_FUNCTIONS.some((name) => isGlobal(callee, name, ctx))) return true;
  if (ts.isPropertyAccessExpression(callee) && TIMER_METHODS.includes(callee.name.text)) return true;
  const ref = resolve(callee, ctx);
  return ref !== undefined && TIMER_MODULES.includes(ref.module) && ref.path.length === 1 && TIMER_FUNCTIONS.includes(ref.path[0]!);
}

/** `name` not declared in the file, or `globalThis.name`. */
function isGlobal(expression: ts.Expression, name: string, ctx: SourceContext): boolean {
  const e = skipParentheses(expression);
  if (ts.isIdentifier(e)) return e.text === name && !ctx.localNames.has(name);
  return ts.isPropertyAccessExpression(e) && e.name.text === name && ts.isIdentifier(e.expression) && GLOBAL_OBJECTS.includes(e.expression.text);
}

// ─── Module bindings ─────────────────────────────────────────────────────────────────────────────────

/** An export of a module, as a path: `[]` is the module itself, `['interceptors', 'retry']` a member. */
interface ModuleRef {
  module: string;
  path: readonly string[];
}

/** What each imported or required name refers to. Type-only imports bind nothing at run time. */
function collectBindings(source: ts.SourceFile): Map<string, ModuleRef> {
  const bindings = new Map<string, ModuleRef>();
  walk(source, (node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      if (!clause || clause.isTypeOnly) return;
      const module = moduleName(node.moduleSpecifier.text);
      if (clause.name) bindings.set(clause.name.text, { module, path: [] }); // CommonJS interop: default is the module
      const named = clause.namedBindings;
      if (named && ts.isNamespaceImport(named)) bindings.set(named.name.text, { module, path: [] });
      if (named && ts.isNamedImports(named)) {
        for (const specifier of named.elements) {
          if (!specifier.isTypeOnly) bindings.set(specifier.name.text, importSpecifierRef(specifier)!);
        }
      }
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const specifier = node.moduleReference.expression;
      if (ts.isStringLiteral(specifier)) bindings.set(node.name.text, { module: moduleName(specifier.text), path: [] });
    } else if (ts.isVariableDeclaration(node) && node.initializer) {
      const specifier = requiredModule(node.initializer);
      if (!specifier) return;
      const module = moduleName(specifier.text);
      if (ts.isIdentifier(node.name)) bindings.set(node.name.text, { module, path: [] });
      if (ts.isObjectBindingPattern(node.name)) {
        for (const element of node.name.elements) {
          const imported = element.propertyName ?? element.name;
          if (ts.isIdentifier(element.name) && !element.dotDotDotToken && (ts.isIdentifier(imported) || ts.isStringLiteral(imported))) {
            bindings.set(element.name.text, { module, path: [imported.text] });
          }
        }
      }
    }
  });
  return bindings;
}

/** Every name declared in the file, so that a local `fetch` is not taken for the global one. */
function collectLocalNames(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  walk(source, (node) => {
    const declares =
      ts.isVariableDeclaration(node) || ts.isParameter(node) || ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) ||
      ts.isBindingElement(node) || ts.isImportSpecifier(node) || ts.isImportClause(node) || ts.isNamespaceImport(node) ||
      ts.isImportEqualsDeclaration(node);
    const name = declares ? ownName(node) : undefined;
    if (name !== undefined) names.add(name);
  });
  return names;
}

function importSpecifierRef(specifier: ts.ImportSpecifier): ModuleRef | undefined {
  const declaration = specifier.parent.parent.parent;
  if (!ts.isStringLiteral(declaration.moduleSpecifier)) return undefined;
  return { module: moduleName(declaration.moduleSpecifier.text), path: [(specifier.propertyName ?? specifier.name).text] };
}

/** What an expression refers to, when it starts from an imported or required module. */
function resolve(expression: ts.Expression, ctx: SourceContext): ModuleRef | undefined {
  const e = skipParentheses(expression);
  if (ts.isIdentifier(e)) return ctx.bindings.get(e.text);
  if (ts.isPropertyAccessExpression(e)) {
    const base = resolve(e.expression, ctx);
    return base && { module: base.module, path: [...base.path, e.name.text] };
  }
  const specifier = requiredModule(e);
  return specifier && { module: moduleName(specifier.text), path: [] };
}

/** The module specifier of an import, export-from, import-equals, `require('x')` or `import('x')`. */
function importedModule(node: ts.Node): ts.StringLiteralLike | undefined {
  if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly && ts.isStringLiteral(node.moduleSpecifier)) return node.moduleSpecifier;
  if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) return node.moduleSpecifier;
  if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
    return node.moduleReference.expression;
  }
  return ts.isCallExpression(node) ? callSpecifier(node) : undefined;
}

/** `require('x')` or `import('x')`, possibly awaited or parenthesised. */
function requiredModule(expression: ts.Expression): ts.StringLiteralLike | undefined {
  let e = skipParentheses(expression);
  if (ts.isAwaitExpression(e)) e = skipParentheses(e.expression);
  return ts.isCallExpression(e) ? callSpecifier(e) : undefined;
}

function callSpecifier(call: ts.CallExpression): ts.StringLiteralLike | undefined {
  const isRequire = ts.isIdentifier(call.expression) && call.expression.text === 'require';
  const isImport = call.expression.kind === ts.SyntaxKind.ImportKeyword;
  const [arg] = call.arguments;
  return (isRequire || isImport) && arg && ts.isStringLiteralLike(arg) ? arg : undefined;
}

/** `node:http` and `http` are one module. */
function moduleName(specifier: string): string {
  return specifier.startsWith('node:') ? specifier.slice('node:'.length) : specifier;
}

// ─── Small syntax helpers ────────────────────────────────────────────────────────────────────────────

/** Visits every descendant of `node` (not `node` itself), depth first; optionally not into nested functions. */
function walk(node: ts.Node, visit: (node: ts.Node) => void, options: { intoFunctions?: boolean } = {}): void {
  const intoFunctions = options.intoFunctions ?? true;
  const step = (child: ts.Node): void => {
    visit(child);
    if (intoFunctions || !ts.isFunctionLike(child)) ts.forEachChild(child, step);
  };
  ts.forEachChild(node, step);
}

function lineOf(source: ts.SourceFile, node: ts.Node): number {
  return source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
}

function contains(ancestor: ts.Node | undefined, node: ts.Node): boolean {
  for (let n: ts.Node | undefined = node; n; n = n.parent) if (n === ancestor) return true;
  return false;
}

function samePath(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((part, i) => part === b[i]);
}

/** `(x)`, `x!`, `x as T`, `<T>x` and `x satisfies T` are all `x` at run time. */
function skipParentheses(expression: ts.Expression): ts.Expression {
  let e = expression;
  while (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e) || ts.isAsExpression(e) || ts.isTypeAssertionExpression(e) || ts.isSatisfiesExpression(e)) {
    e = e.expression;
  }
  return e;
}

function isLiteral(expression: ts.Expression, value: (typeof RETRIES_OFF_VALUES)[number]): boolean {
  const e = skipParentheses(expression);
  return value === 'false' ? e.kind === ts.SyntaxKind.FalseKeyword : ts.isNumericLiteral(e) && Number(e.text) === Number(value);
}

function ownProperty(object: ts.ObjectLiteralExpression, name: string): ts.ObjectLiteralElementLike | undefined {
  return object.properties.find((property) => propertyName(property) === name);
}

function propertyName(property: ts.ObjectLiteralElementLike): string | undefined {
  const name = property.name;
  return name && (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name)) ? name.text : undefined;
}
