import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkRetryOwnership, findUnusedExemptions } from './retry-gate.ts';
import type { Exemption, Violation } from './retry-gate.ts';

const repoRoot = resolve(import.meta.dirname, '../..');

/** Code that retries or builds its own client, one file per rule, keyed by path under the planted root. */
const planted = {
  'functions/calls/bad-loop.ts': `
export async function dialWithRetry(place: () => Promise<void>): Promise<void> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      await place();
      return;
    } catch {
      continue;
    }
  }
}
`,
  'functions/calls/bad-flag-loop.ts': `
export async function dialUntilAccepted(place: () => Promise<void>): Promise<void> {
  let accepted = false;
  while (!accepted) {
    try {
      await place();
      accepted = true;
    } catch (error) {
      console.warn('placer failed', error);
    }
  }
}
`,
  'functions/webhooks/bad-import.ts': `
import pRetry from 'p-retry';
export const deliver = (send: () => Promise<void>) => pRetry(send, { retries: 5 });
`,
  'functions/mail/bad-client.ts': `
import { SQSClient } from '@aws-sdk/client-sqs';
export const sqs = new SQSClient({});
`,
  'functions/platform/aws.ts': `
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
export const retrying = new SQSClient({ region: 'eu-west-1', maxAttempts: 3 });
export const defaulted = new DynamoDBClient({ region: 'eu-west-1' });
export const once = new SQSClient({ region: 'eu-west-1', maxAttempts: 1 });
`,
  'functions/calls/bad-recursion.ts': `
export async function placeCall(send: () => Promise<void>): Promise<void> {
  try {
    await send();
  } catch {
    await placeCall(send);
  }
}
`,
  'functions/calls/bad-timer.ts': `
export async function notifyPlacer(send: () => Promise<void>): Promise<void> {
  try {
    await send();
  } catch {
    setTimeout(() => void send(), 1000);
  }
}
`,
  'functions/webhooks/bad-promise-retry.ts': `
export function deliver(send: () => Promise<void>): Promise<void> {
  return send().catch(() => deliver(send));
}
`,
  'functions/calls/bad-fetch.ts': `
export async function askPlacer(url: string): Promise<number> {
  const response = await fetch(url, { method: 'POST' });
  return response.status;
}
`,
  'functions/webhooks/bad-undici.ts': `
import { Agent, interceptors } from 'undici';
export const dispatcher = new Agent().compose(interceptors.retry({ maxRetries: 3 }));
`,
  'functions/calendar/bad-google.ts': `
import { google } from 'googleapis';
import { calendar } from '@googleapis/calendar';
import { OAuth2Client } from 'google-auth-library';
import { request } from 'gaxios';
export const clients = { google, calendar, OAuth2Client, request };
`,
  'bin/bad-google-require.js': `
const { createAPIRequest } = require('googleapis-common');
module.exports = createAPIRequest;
`,
  'bin/bad-require.js': `
const axios = require('axios');
module.exports = () => axios.get('https://example.test');
`,
} as const;

/** Where each planted file must be reported, found by a snippet of the reported line. */
const expected: { file: keyof typeof planted; at: string; rule: Violation['rule'] }[] = [
  { file: 'functions/calls/bad-loop.ts', at: 'for (let attempt', rule: 'retry-loop' },
  { file: 'functions/calls/bad-flag-loop.ts', at: 'while (!accepted)', rule: 'retry-loop' },
  { file: 'functions/webhooks/bad-import.ts', at: "from 'p-retry'", rule: 'retry-library' },
  { file: 'functions/mail/bad-client.ts', at: 'new SQSClient', rule: 'unowned-client' },
  { file: 'functions/platform/aws.ts', at: 'maxAttempts: 3', rule: 'client-retries-on' },
  { file: 'functions/platform/aws.ts', at: 'new DynamoDBClient', rule: 'client-retries-on' },
  { file: 'functions/calls/bad-recursion.ts', at: 'await placeCall(send)', rule: 'retry-loop' },
  { file: 'functions/calls/bad-timer.ts', at: 'setTimeout(', rule: 'retry-loop' },
  { file: 'functions/webhooks/bad-promise-retry.ts', at: '.catch(() => deliver(send))', rule: 'retry-loop' },
  { file: 'functions/calls/bad-fetch.ts', at: 'await fetch(', rule: 'unowned-client' },
  { file: 'functions/webhooks/bad-undici.ts', at: 'new Agent()', rule: 'unowned-client' },
  { file: 'functions/webhooks/bad-undici.ts', at: 'new Agent()', rule: 'retry-library' },
  { file: 'bin/bad-require.js', at: "require('axios')", rule: 'retry-library' },
  // Google's clients retry by default (GET/DELETE on 408/429/5xx, token POSTs, a re-send after a refresh).
  { file: 'functions/calendar/bad-google.ts', at: "from 'googleapis'", rule: 'retry-library' },
  { file: 'functions/calendar/bad-google.ts', at: "from '@googleapis/calendar'", rule: 'retry-library' },
  { file: 'functions/calendar/bad-google.ts', at: "from 'google-auth-library'", rule: 'retry-library' },
  { file: 'functions/calendar/bad-google.ts', at: "from 'gaxios'", rule: 'retry-library' },
  { file: 'bin/bad-google-require.js', at: "require('googleapis-common')", rule: 'retry-library' },
];

/** Code that looks like the above but does not retry or build a client: none of it may be reported. */
const innocent = {
  'functions/webhooks/mentions.ts': `
// We used to call p-retry here: retry(send, 5) and new SQSClient({ maxAttempts: 3 }) in a for-loop.
/* for (;;) { try { await fetch(url); break; } catch { continue; } } */
export const history = "import pRetry from 'p-retry'; retry(3); fetch(url); setTimeout(again, 1000)";
export const snippet = \`const client = new SQSClient({ maxAttempts: 3 }); require('axios')\`;
`,
  'functions/calls/each-contact.ts': `
// A loop over items that logs a failure and moves on goes round on success too: it is not a retry.
export async function dialEach(contacts: string[], place: (c: string) => Promise<void>): Promise<void> {
  for (const contact of contacts) {
    try {
      await place(contact);
    } catch (error) {
      console.warn('dial failed', contact, error);
    }
  }
}
`,
  'functions/calls/types-only.ts': `
import type { Options } from 'p-retry';
import type { SQSClient } from '@aws-sdk/client-sqs';
export type Retrying = Options;
export const describe = (client: SQSClient) => client.config;
`,
} as const;

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

/** A fresh root holding `files` (path → source). */
function plantTree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'retry-gate-'));
  roots.push(root);
  for (const [path, source] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), source);
  }
  return root;
}

/** The same files moved under functions/jobs/ (`functions/calls/x.ts` → `functions/jobs/calls/x.ts`). */
function underJobs(files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).map(([path, source]) => [path.replace(/^(functions\/)?/, 'functions/jobs/'), source]));
}

function lineOf(source: string, snippet: string): number {
  const index = source.indexOf(snippet);
  if (index < 0) throw new Error(`snippet not found: ${snippet}`);
  return source.slice(0, index).split('\n').length;
}

const brief = (violations: Violation[]) => violations.map((v) => `${v.file}:${v.line} ${v.rule}`).sort();

describe('the retry-owner gate on this repository', () => {
  it('finds no retry logic or unowned client outside functions/jobs', () => {
    const violations = checkRetryOwnership(repoRoot);
    expect(violations, violations.map((v) => `${v.file}:${v.line} ${v.rule} ${v.message}`).join('\n')).toEqual([]);
  });

  it('needs every exemption it has', () => {
    expect(findUnusedExemptions(repoRoot)).toEqual([]);
  });
});

describe('checkRetryOwnership on a planted tree', () => {
  it('reports each planted retry or client with its rule and line, and nothing else', () => {
    const root = plantTree({ ...planted, ...innocent });

    const want = expected.map(({ file, at, rule }) => `${file}:${lineOf(planted[file], at)} ${rule}`).sort();
    expect(brief(checkRetryOwnership(root))).toEqual(want);
  });

  it('lets the job layer retry, but not build a client: under functions/jobs only the client findings remain', () => {
    const notPlatform = Object.fromEntries(Object.entries(planted).filter(([file]) => !file.startsWith('functions/platform/')));
    const root = plantTree({ ...planted, ...underJobs(notPlatform) });

    const reported = checkRetryOwnership(root);
    const inJobs = brief(reported.filter((v) => v.file.startsWith('functions/jobs/')));
    const clientRules = new Set(['unowned-client', 'client-retries-on']);
    const want = expected
      .filter(({ file, rule }) => clientRules.has(rule) && !file.startsWith('functions/platform/') && file.startsWith('functions/'))
      .map(({ file, at, rule }) => `${file.replace(/^functions\//, 'functions/jobs/')}:${lineOf(planted[file], at)} ${rule}`)
      .sort();
    expect(want.length).toBeGreaterThan(1);
    expect(inJobs).toEqual(want);
    expect(new Set(reported.filter((v) => !v.file.startsWith('functions/jobs/')).map((v) => v.file))).toEqual(new Set(Object.keys(planted)));
  });

  it('does not report comments, strings, type-only imports or a loop over items', () => {
    const root = plantTree(innocent);

    expect(checkRetryOwnership(root)).toEqual([]);
  });

  it('excuses an exempted rule only inside the exempted function', () => {
    const exemption: Exemption = { file: 'functions/calls/ready.ts', functionName: 'waitUntilReady', rule: 'retry-loop', reason: 'test' };
    const poll = (name: string) => `
export async function ${name}(ping: () => Promise<void>): Promise<void> {
  for (;;) {
    try {
      await ping();
      break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
`;
    const other = poll('pollSomethingElse');
    const source = poll(exemption.functionName) + other;
    const root = plantTree({ [exemption.file]: source });

    const offset = source.split('\n').length - other.split('\n').length;
    expect(brief(checkRetryOwnership(root, { exemptions: [exemption] }))).toEqual([
      `${exemption.file}:${offset + lineOf(other, 'for (;;)')} retry-loop`,
      `${exemption.file}:${offset + lineOf(other, 'setTimeout(')} retry-loop`,
    ]);
    expect(brief(checkRetryOwnership(root, { exemptions: [] }))).toHaveLength(4);
  });
});
