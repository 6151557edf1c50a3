/**
 * The structure gate: the layers of docs/architecture.md, checked on the source. It parses every file under
 * `functions/` with the TypeScript compiler and reports
 *
 * - `layer-import`: an import that runs against the layers. functions/platform imports only itself;
 *   functions/jobs only itself and platform; a context (calls, webhooks, mail, ops, calendar) only itself, platform
 *   and the job layer's public surface (functions/jobs/index.ts), never another context. The composition
 *   root and the hosts (app, local, cli, panel, demo) may import anything below them.
 * - `job-layer-domain-name`: functions/jobs naming a domain kind, queue or discard reason: in a string
 *   (any such name, exactly), or in a comment (a dotted kind name, or a declared reason with an underscore,
 *   as a whole word; plain words like "mail" in prose are left alone).
 * - `tenant-scope-mint`: a file other than the authentication step (functions/platform/http.ts) importing
 *   what makes a tenant scope (`scopeOfKey`, `operatorScope` of functions/platform/tenancy.ts): a scope is
 *   made from a verified API key or an operator's path, never by a handler from a tenant id it was sent.
 *
 * - `entry-reach`: a Lambda entry point (functions/app/lambda/*.ts) whose runtime import graph (type-only
 *   imports left out: they are not in the bundle) reaches a functions/ folder its allow-list does not name,
 *   or an entry with no allow-list (functions/app/entry-reach.ts): each bundle holds what its function runs.
 *
 * It reads syntax, not text, so an import inside a comment is not a finding, and a name in a string is one.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export const STRUCTURE_RULES = ['layer-import', 'job-layer-domain-name', 'tenant-scope-mint', 'entry-reach'] as const;
export type StructureRule = (typeof STRUCTURE_RULES)[number];

export const STRUCTURE_RULE_DESCRIPTIONS: Readonly<Record<StructureRule, string>> = {
  'layer-import': 'an import against the layers: platform ← jobs ← a context ← app and the hosts; no context imports another',
  'job-layer-domain-name': 'functions/jobs names a domain kind, queue or discard reason (the contexts declare those)',
  'tenant-scope-mint': 'a tenant scope is made only by the authentication step (functions/platform/http.ts), from a key or an operator’s path',
  'entry-reach': 'a Lambda entry (functions/app/lambda) reaches, through the code it imports, only the functions/ folders its allow-list names (functions/app/entry-reach.ts)',
};

/** What makes a tenant scope, and the one file of functions/ that may import it. */
const SCOPE_MINTS = ['scopeOfKey', 'operatorScope'] as const;
const SCOPE_MINTER = 'functions/platform/http.ts';
const TENANCY = 'functions/platform/tenancy.ts';

export interface StructureViolation {
  rule: StructureRule;
  /** Relative to the root, with forward slashes. */
  file: string;
  line: number;
  message: string;
}

/** The bounded contexts: each imports only itself, platform and functions/jobs/index.ts. */
export const CONTEXTS = ['calls', 'webhooks', 'mail', 'ops', 'calendar'] as const;
/** The composition root and the hosts: they assemble the contexts, so they may import anything in functions/. */
export const HOSTS = ['app', 'local', 'cli', 'panel', 'demo'] as const;

/** The domain's names, as the contexts declare them (functions/app/system.ts `modules`). */
export interface DomainNames {
  kinds: readonly string[];
  queues: readonly string[];
  reasons: readonly string[];
}

const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/;

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

const posix = (path: string) => path.split(sep).join('/');

function parse(path: string): ts.SourceFile {
  return ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
}

const lineOf = (file: ts.SourceFile, pos: number) => file.getLineAndCharacterOfPosition(pos).line + 1;

/** Every module specifier a file imports or re-exports (static imports, `export … from`, `import()`, `require()`). */
function specifiers(file: ts.SourceFile): { text: string; pos: number }[] {
  const found: { text: string; pos: number }[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ text: node.moduleSpecifier.text, pos: node.getStart(file) });
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteralLike(node.arguments[0]!)) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) {
        found.push({ text: node.arguments[0].text, pos: node.getStart(file) });
      }
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ text: node.argument.literal.text, pos: node.getStart(file) });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** Which part of functions/ a path is in: its first folder (`calls`, `jobs`, …), or undefined outside functions/. */
function partOf(root: string, path: string): string | undefined {
  const rel = posix(relative(join(root, 'functions'), path));
  if (rel.startsWith('..')) return undefined;
  return rel.includes('/') ? rel.split('/')[0] : undefined;
}

/** Why `from` may not import `to` (both parts of functions/), or undefined when it may. */
function refusal(from: string, to: string, toPath: string): string | undefined {
  if (from === to) return undefined;
  if ((HOSTS as readonly string[]).includes(from)) return undefined;
  if (from === 'platform') return `functions/platform imports only itself, not functions/${to}`;
  if (from === 'jobs') return to === 'platform' ? undefined : `functions/jobs imports only itself and functions/platform, not functions/${to}`;
  if ((CONTEXTS as readonly string[]).includes(from)) {
    if (to === 'platform') return undefined;
    if (to === 'jobs') return toPath === 'jobs/index.ts' ? undefined : `a context imports the job layer's public surface (functions/jobs/index.ts), not functions/${toPath}`;
    if ((CONTEXTS as readonly string[]).includes(to)) return `the ${from} context imports the ${to} context's files (functions/${toPath}); contexts talk through ports the app wires`;
    return `a context does not import functions/${to} (the composition root and the hosts sit above the contexts)`;
  }
  return `functions/${from} is in no layer: add it to CONTEXTS or HOSTS (test/gate/structure-gate.ts)`;
}

/** `layer-import` over every file of functions/. */
export function checkLayers(root: string): StructureViolation[] {
  const violations: StructureViolation[] = [];
  for (const path of sourceFiles(join(root, 'functions'))) {
    const from = partOf(root, path);
    if (!from) continue;
    const file = parse(path);
    for (const { text, pos } of specifiers(file)) {
      if (!text.startsWith('.')) continue;
      const target = resolve(dirname(path), text);
      const to = partOf(root, target);
      if (!to) continue;
      const why = refusal(from, to, posix(relative(join(root, 'functions'), target)));
      if (why) violations.push({ rule: 'layer-import', file: posix(relative(root, path)), line: lineOf(file, pos), message: why });
    }
  }
  return violations;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `job-layer-domain-name` over every file of functions/jobs, given the names the contexts declare. */
export function checkJobLayerNames(root: string, names: DomainNames): StructureViolation[] {
  const exact = new Set([...names.kinds, ...names.queues, ...names.reasons]);
  // In prose, only names that cannot be ordinary words: dotted kinds and reasons with an underscore.
  const distinctive = [...names.kinds, ...names.reasons.filter((r) => r.includes('_'))];
  const inProse = distinctive.length ? new RegExp(`(?<![\\w.])(${distinctive.map(escape).join('|')})(?![\\w])`, 'g') : undefined;
  const violations: StructureViolation[] = [];
  for (const path of sourceFiles(join(root, 'functions', 'jobs'))) {
    const file = parse(path);
    const rel = posix(relative(root, path));
    const report = (pos: number, name: string, where: string) =>
      violations.push({ rule: 'job-layer-domain-name', file: rel, line: lineOf(file, pos), message: `"${name}" ${where}: a name a context declares` });
    const visit = (node: ts.Node) => {
      if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
        const text = node.text;
        if (exact.has(text)) report(node.getStart(file), text, 'in a string');
        else if (inProse) for (const match of text.matchAll(inProse)) report(node.getStart(file), match[1]!, 'in a string');
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
    if (inProse) {
      const text = file.getFullText();
      const seen = new Set<number>();
      const scanComments = (node: ts.Node) => {
        for (const range of [...(ts.getLeadingCommentRanges(text, node.getFullStart()) ?? []), ...(ts.getTrailingCommentRanges(text, node.getEnd()) ?? [])]) {
          if (seen.has(range.pos)) continue;
          seen.add(range.pos);
          for (const match of text.slice(range.pos, range.end).matchAll(inProse)) report(range.pos + match.index, match[1]!, 'in a comment');
        }
        ts.forEachChild(node, scanComments);
      };
      scanComments(file);
      // Comments after the last statement hang off the end-of-file token.
      for (const range of ts.getLeadingCommentRanges(text, file.endOfFileToken.getFullStart()) ?? []) {
        if (seen.has(range.pos)) continue;
        for (const match of text.slice(range.pos, range.end).matchAll(inProse)) report(range.pos + match.index, match[1]!, 'in a comment');
      }
    }
  }
  return violations.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

/**
 * `tenant-scope-mint` over every file of functions/: only the authentication step imports what makes a
 * {@link TENANCY} scope (named imports, re-exports and a namespace import alike).
 */
export function checkScopeMints(root: string): StructureViolation[] {
  const violations: StructureViolation[] = [];
  for (const path of sourceFiles(join(root, 'functions'))) {
    const rel = posix(relative(root, path));
    if (rel === SCOPE_MINTER || rel === TENANCY) continue;
    const file = parse(path);
    for (const statement of file.statements) {
      if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) || !statement.moduleSpecifier || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
      const target = posix(relative(root, resolve(dirname(path), statement.moduleSpecifier.text)));
      if (target !== TENANCY) continue;
      const names: string[] = [];
      if (ts.isImportDeclaration(statement)) {
        const bindings = statement.importClause?.namedBindings;
        if (bindings && ts.isNamespaceImport(bindings)) names.push('* (every export)');
        if (bindings && ts.isNamedImports(bindings)) names.push(...bindings.elements.map((e) => (e.propertyName ?? e.name).text));
      } else {
        const clause = statement.exportClause;
        if (!clause) names.push('* (every export)');
        else if (ts.isNamedExports(clause)) names.push(...clause.elements.map((e) => (e.propertyName ?? e.name).text));
        else names.push('* (every export)');
      }
      for (const name of names.filter((n) => n.startsWith('*') || (SCOPE_MINTS as readonly string[]).includes(n))) {
        violations.push({ rule: 'tenant-scope-mint', file: rel, line: lineOf(file, statement.getStart(file)), message: `imports ${name} from ${TENANCY}: only ${SCOPE_MINTER} makes a tenant scope` });
      }
    }
  }
  return violations.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

/**
 * The module specifiers a file imports at run time: as {@link specifiers}, but without `import type`,
 * `export type` and `import('…')` types (erased before bundling), nor a named import whose every binding
 * is a type.
 */
function runtimeSpecifiers(file: ts.SourceFile): { text: string; pos: number }[] {
  const found: { text: string; pos: number }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const typesOnly = clause && (clause.isTypeOnly || (!clause.name && bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly)));
      if (!typesOnly) found.push({ text: node.moduleSpecifier.text, pos: node.getStart(file) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.isTypeOnly) found.push({ text: node.moduleSpecifier.text, pos: node.getStart(file) });
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteralLike(node.arguments[0]!)) {
      const callee = node.expression;
      if (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === 'require')) found.push({ text: node.arguments[0].text, pos: node.getStart(file) });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** Where each Lambda entry may reach: its file name under functions/app/lambda → the functions/ folders its bundle may hold. */
export type EntryReach = Readonly<Record<string, readonly string[]>>;

/**
 * Every functions/ file an entry reaches through relative runtime imports, each with the first import
 * chain that reached it (entry first), relative to the root.
 */
export function reachOf(root: string, entry: string, imports: Map<string, string[]> = new Map()): Map<string, string[]> {
  const start = join(root, entry);
  const chains = new Map<string, string[]>([[posix(relative(root, start)), [posix(relative(root, start))]]]);
  const queue = [start];
  while (queue.length) {
    const path = queue.shift()!;
    const chain = chains.get(posix(relative(root, path)))!;
    if (!existsSync(path)) continue;
    // Each file parsed once per check, however many entries reach it.
    let specs = imports.get(path);
    if (!specs) imports.set(path, (specs = runtimeSpecifiers(parse(path)).map((s) => s.text)));
    for (const text of specs) {
      if (!text.startsWith('.')) continue;
      const target = resolve(dirname(path), text);
      const rel = posix(relative(root, target));
      if (chains.has(rel) || partOf(root, target) === undefined) continue;
      chains.set(rel, [...chain, rel]);
      queue.push(target);
    }
  }
  return chains;
}

const LAMBDA_ENTRIES = 'functions/app/lambda';
/** What every deployed function agrees on, as data: what it reaches is allowed to every entry. */
const CATALOG = 'functions/app/catalog.ts';

/**
 * `entry-reach` over every file of functions/app/lambda: each entry's runtime import graph stays inside
 * the folders `allowed` names for it (functions/app, and what the catalog reaches, always allowed). One
 * finding per folder reached out of bounds, at the entry, with the chain that reaches it.
 */
export function checkEntryReach(root: string, allowed: EntryReach): StructureViolation[] {
  const violations: StructureViolation[] = [];
  const imports = new Map<string, string[]>();
  const shared = existsSync(join(root, CATALOG)) ? new Set(reachOf(root, CATALOG, imports).keys()) : new Set<string>();
  const dir = join(root, LAMBDA_ENTRIES);
  const entries = existsSync(dir) ? readdirSync(dir).filter((f) => SOURCE.test(f) && !f.endsWith('.d.ts')) : [];
  for (const name of entries.sort()) {
    const file = `${LAMBDA_ENTRIES}/${name}`;
    const list = allowed[name];
    if (!list) {
      violations.push({ rule: 'entry-reach', file, line: 1, message: `no allow-list for this entry: name the functions/ folders it may reach in functions/app/entry-reach.ts` });
      continue;
    }
    const outside = new Map<string, string[]>();
    for (const [path, chain] of reachOf(root, file, imports)) {
      const part = partOf(root, join(root, path));
      if (part && part !== 'app' && !shared.has(path) && !list.includes(part) && !outside.has(part)) outside.set(part, chain);
    }
    for (const [part, chain] of [...outside].sort(([a], [b]) => a.localeCompare(b))) {
      violations.push({ rule: 'entry-reach', file, line: 1, message: `reaches functions/${part}, outside its allow-list (${list.join(', ')}): ${chain.join(' → ')}` });
    }
  }
  for (const name of Object.keys(allowed).filter((n) => !entries.includes(n))) {
    violations.push({ rule: 'entry-reach', file: `${LAMBDA_ENTRIES}/${name}`, line: 1, message: 'an allow-list for an entry that is not there: remove it from functions/app/entry-reach.ts' });
  }
  return violations;
}
