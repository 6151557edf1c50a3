import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { entryReach } from '../../functions/app/entry-reach.ts';
import { checkEntryReach, checkJobLayerNames, checkLayers, checkScopeMints } from './structure-gate.ts';
import type { DomainNames } from './structure-gate.ts';
import { domainNames } from './domain-names.ts';

const repoRoot = resolve(import.meta.dirname, '../..');

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A fresh root holding `files` (path → source). */
function plantTree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'structure-gate-'));
  roots.push(root);
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), source);
  }
  return root;
}

const names: DomainNames = { kinds: ['webhook.deliver', 'owner.notify'], queues: ['webhooks', 'mail'], reasons: ['http_4xx', 'gone'] };

describe('the structure gate on this repository', () => {
  it('FindsNoImportAgainstTheLayers', () => {
    expect(checkLayers(repoRoot)).toEqual([]);
  });

  it('FindsEveryLambdaEntryWithinItsAllowList_AndTheListsTellTheEntriesApart', () => {
    expect(checkEntryReach(repoRoot, entryReach)).toEqual([]);
    // The lists are not all the same: the narrow workers do not reach what the APIs do.
    expect(entryReach['ops-worker.ts']).not.toContain('mail');
    expect(entryReach['mail-worker.ts']).not.toContain('calls');
    expect(entryReach['deliveries-worker.ts']).not.toContain('calls');
    // Narrowed by one folder, this repository's intake is out of bounds (it tells owners of finalised batches through mail).
    const narrowed = { ...entryReach, 'intake.ts': entryReach['intake.ts'].filter((part) => part !== 'mail') };
    expect(checkEntryReach(repoRoot, narrowed).map((v) => [v.file, v.rule, v.message.split(',')[0]])).toEqual([
      ['functions/app/lambda/intake.ts', 'entry-reach', 'reaches functions/mail'],
    ]);
  });

  it('FindsNoTenantScopeMadeOutsideTheAuthenticationStep', () => {
    expect(checkScopeMints(repoRoot)).toEqual([]);
  });

  it('FindsNoDomainNameInTheJobLayer_TheNamesReadFromTheContextsOwnDeclarations', () => {
    const declared = domainNames();
    // The names come from the modules, so a kind added to a context is checked without editing the gate.
    expect(declared.kinds).toContain('webhook.deliver');
    expect(declared.queues).toEqual(expect.arrayContaining(['calls', 'webhooks', 'mail', 'ops']));
    expect(declared.reasons).toEqual(expect.arrayContaining(['http_4xx', 'gone', 'mail_rejected']));
    expect(declared.reasons).not.toContain('exhausted');
    expect(checkJobLayerNames(repoRoot, declared)).toEqual([]);
  });
});

describe('the structure gate finds what it is for', () => {
  it('ReportsAHandlerMakingATenantScope_WhateverTheImportsShape_AndLetsTheAuthStepAndTheScopesType', () => {
    const root = plantTree({
      'functions/calls/api.ts': `import { operatorScope } from '../platform/tenancy.ts';\nimport type { TenantScope } from '../platform/tenancy.ts';\nexport const s: TenantScope = operatorScope('acme');`,
      'functions/webhooks/api.ts': `import { scopeOfKey as asTenant } from '../platform/tenancy.ts';\nexport const s = asTenant('acme', 'k');`,
      'functions/mail/routes.ts': `import * as tenancy from '../platform/tenancy.ts';\nexport const s = tenancy.operatorScope('acme');`,
      'functions/calls/reexport.ts': `export { operatorScope } from '../platform/tenancy.ts';`,
      'functions/platform/http.ts': `import { operatorScope, scopeOfKey } from './tenancy.ts';\nexport const x = [operatorScope, scopeOfKey];`,
      'functions/platform/tenancy.ts': `export const operatorScope = (t: string) => t;\nexport const scopeOfKey = (t: string) => t;\nexport const tenantIdSchema = 1;`,
      'functions/calls/schemas.ts': `import { tenantIdSchema } from '../platform/tenancy.ts';\nexport const x = tenantIdSchema;`,
    });
    expect(checkScopeMints(root).map((v) => [v.file, v.line, v.rule])).toEqual([
      ['functions/calls/api.ts', 1, 'tenant-scope-mint'],
      ['functions/calls/reexport.ts', 1, 'tenant-scope-mint'],
      ['functions/mail/routes.ts', 1, 'tenant-scope-mint'],
      ['functions/webhooks/api.ts', 1, 'tenant-scope-mint'],
    ]);
  });

  it('ReportsAContextImportingAnotherContext_OrTheJobLayersInternals_OrAHost', () => {
    const root = plantTree({
      'functions/calls/finaliser.ts': `import { ownerNotifyKind } from '../mail/kinds.ts';\nimport { JobStore } from '../jobs/store.ts';\nimport { System } from '../app/system.ts';\nexport const x = [ownerNotifyKind, JobStore, System];`,
      'functions/webhooks/delivery.ts': `export const policy = async () => (await import('../calls/kinds.ts')).dialKind;`,
    });
    expect(checkLayers(root).map((v) => [v.file, v.line, v.message.split(' (')[0]!.split(':')[0]])).toEqual([
      ['functions/calls/finaliser.ts', 1, "the calls context imports the mail context's files"],
      ['functions/calls/finaliser.ts', 2, "a context imports the job layer's public surface"],
      ['functions/calls/finaliser.ts', 3, 'a context does not import functions/app'],
      ['functions/webhooks/delivery.ts', 1, "the webhooks context imports the calls context's files"],
    ]);
  });

  it('ReportsAnArrowRunningBackUp_FromPlatformOrTheJobLayer', () => {
    const root = plantTree({
      'functions/platform/local/queues.ts': `import type { DispatchTransport } from '../../jobs/dispatch.ts';\nexport type T = DispatchTransport;`,
      'functions/jobs/policies.ts': `export { webhookDeliverKind } from '../webhooks/kinds.ts';`,
      'functions/reports/x.ts': `import { y } from '../platform/y.ts';\nexport const x = y;`,
    });
    expect(checkLayers(root).map((v) => [v.file, v.rule])).toEqual([
      ['functions/jobs/policies.ts', 'layer-import'],
      ['functions/platform/local/queues.ts', 'layer-import'],
      ['functions/reports/x.ts', 'layer-import'],
    ]);
  });

  it('LetsTheHostsImportEverything_AndAContextItsOwnFilesPlatformAndTheJobLayersSurface', () => {
    const root = plantTree({
      'functions/app/system.ts': `import { a } from '../calls/module.ts';\nimport { b } from '../jobs/runtime.ts';\nimport { c } from '../webhooks/module.ts';\nexport const x = [a, b, c];`,
      'functions/local/host.ts': `import { System } from '../app/system.ts';\nimport { panelRoutes } from '../panel/index.ts';\nexport const x = [System, panelRoutes];`,
      'functions/calls/dialer.ts': `import { handle } from '../jobs/index.ts';\nimport { iso } from '../platform/clock.ts';\nimport { s } from './local/simulator.ts';\nimport type { Z } from 'zod';\nexport const x = [handle, iso, s];\nexport type Y = Z;`,
      'functions/calls/local/simulator.ts': `import { callIdFor } from '../model.ts';\nexport const s = callIdFor;`,
      'functions/jobs/executor.ts': `import { clockMs } from '../platform/clock.ts';\n// import { dialKind } from '../calls/kinds.ts';\nexport const x = clockMs;`,
    });
    expect(checkLayers(root)).toEqual([]);
  });

  it('ReportsADomainNameInTheJobLayersStringsAndComments_ButNotPlainWordsInProse', () => {
    const root = plantTree({
      'functions/jobs/policies.ts': [
        `export const table = { 'webhook.deliver': 18 };`,
        `export const queue = 'webhooks';`,
        `export const reason = \`\${'x'}gone\`;`,
        `// owner.notify waits 20 s, then ×3; http_4xx is discarded at once.`,
        `/** Delivers webhooks, sends mail: the words of prose, not names. */`,
        `export const mine = 'exhausted';`,
      ].join('\n'),
    });
    expect(checkJobLayerNames(root, names).map((v) => [v.line, v.message])).toEqual([
      [1, '"webhook.deliver" in a string: a name a context declares'],
      [2, '"webhooks" in a string: a name a context declares'],
      [3, '"gone" in a string: a name a context declares'],
      [4, '"owner.notify" in a comment: a name a context declares'],
      [4, '"http_4xx" in a comment: a name a context declares'],
    ]);
  });

  it('ReportsALambdaEntryReachingAFolderOutsideItsAllowList_ThroughAnyDepth_WithTheChain', () => {
    const root = plantTree({
      'functions/app/lambda/intake.ts': `import { build } from '../contexts/calls.ts';\nimport type { Mailer } from '../../mail/types.ts';\nexport const handler = build;\nexport type M = Mailer;`,
      'functions/app/contexts/calls.ts': `import { complete } from '../../calls/completion.ts';\nexport const build = complete;`,
      'functions/calls/completion.ts': `import { notify } from '../webhooks/notify.ts';\nimport { kinds } from '../mail/kinds.ts';\nexport const complete = [notify, kinds];`,
      'functions/webhooks/notify.ts': `export const notify = () => import('../ops/probe.ts');`,
      'functions/ops/probe.ts': `export const probe = 1;`,
      'functions/mail/types.ts': `export interface Mailer { send(): void }`,
      'functions/mail/kinds.ts': `export const kinds = [];`,
      // What the catalog reaches (the kinds, as data) is allowed to every entry.
      'functions/app/catalog.ts': `export { kinds } from '../mail/kinds.ts';`,
      'functions/app/lambda/ops-worker.ts': `import { probe } from '../../ops/probe.ts';\nexport const handler = probe;`,
      'functions/app/lambda/new-worker.ts': `export const handler = 1;`,
    });
    const reach = { 'intake.ts': ['calls', 'mail'], 'ops-worker.ts': ['ops'], 'gone.ts': ['jobs'] };
    expect(checkEntryReach(root, reach).map((v) => [v.file, v.message])).toEqual([
      ['functions/app/lambda/intake.ts', 'reaches functions/ops, outside its allow-list (calls, mail): functions/app/lambda/intake.ts → functions/app/contexts/calls.ts → functions/calls/completion.ts → functions/webhooks/notify.ts → functions/ops/probe.ts'],
      ['functions/app/lambda/intake.ts', 'reaches functions/webhooks, outside its allow-list (calls, mail): functions/app/lambda/intake.ts → functions/app/contexts/calls.ts → functions/calls/completion.ts → functions/webhooks/notify.ts'],
      ['functions/app/lambda/new-worker.ts', 'no allow-list for this entry: name the functions/ folders it may reach in functions/app/entry-reach.ts'],
      ['functions/app/lambda/gone.ts', 'an allow-list for an entry that is not there: remove it from functions/app/entry-reach.ts'],
    ]);
    // The mail kinds the catalog reaches are no finding, nor the type-only import of mail's types.
    expect(checkEntryReach(root, { ...reach, 'intake.ts': ['calls', 'webhooks', 'ops'] }).filter((v) => v.file.endsWith('intake.ts'))).toEqual([]);
  });
});
