import type { SentRequests } from '../../../functions/platform/recorder.ts';
import { deploy } from './deployment.ts';
import type { Deployment } from './deployment.ts';
import { decide } from './evaluate.ts';
import type { Decision } from './evaluate.ts';
import { iamRequestsOf } from './requests.ts';
import type { IamRequest } from './requests.ts';

/**
 * The IAM check, for any test that records what redial sends (test/infra/iam.test.ts, the fault
 * simulation's seeds, a bundle run): every request turned into what AWS authorizes and decided against
 * the sending function's role in the synthesized stack.
 *
 * @example
 *   const log = new SentRequestLog(() => currentFunction(), { [tableName]: 'table:jobs' });
 *   // … run redial with log as the clients' interceptor …
 *   expect(await deniedRequests(log.toJSON())).toEqual([]);
 */

let deployed: Deployment | undefined;
/** The stack of test/infra/synth.ts BASE_PROPS, synthesized once per test file. */
export const deployment = (): Deployment => (deployed ??= deploy());

/** What a decision says, in one line. */
export const describeDecision = (d: Decision): string =>
  `${d.result} ${d.request.function} ${d.request.action} ${d.request.resource.label} ${JSON.stringify(d.request.context)} (${d.request.from})${d.ignoredContextKeys.length ? ` ignoring unknown keys ${d.ignoredContextKeys.join(', ')}` : ''}${d.error ? `: ${d.error}` : ''}`;

/** Whether a decision is a clean allow: allowed, with every condition key of the request known for its action. */
export const cleanlyAllowed = (d: Decision): boolean => d.result === 'Allowed' && d.ignoredContextKeys.length === 0;

/** Whether a decision is a clean denial (not an evaluator error, every key known). */
export const cleanlyDenied = (d: Decision): boolean => (d.result === 'ImplicitlyDenied' || d.result === 'ExplicitlyDenied') && d.ignoredContextKeys.length === 0;

/** The IAM requests a log amounts to, and each one's decision. */
export async function decideSent(sent: SentRequests | readonly SentRequests[]): Promise<{ requests: IamRequest[]; decisions: Decision[] }> {
  const d = deployment();
  const requests = ([] as SentRequests[]).concat(sent as SentRequests[]).flatMap((log) => iamRequestsOf(log, d));
  return { requests, decisions: await decide(requests, d) };
}

/**
 * Every request of the log(s) that its function's role would not be allowed, one line each (empty: all
 * allowed). A request sent outside any function (`unattributed`) is one too, and so is a request with a
 * condition key the service reference does not know for its action.
 */
export async function deniedRequests(sent: SentRequests | readonly SentRequests[]): Promise<string[]> {
  const { decisions } = await decideSent(sent);
  return decisions.filter((d) => !cleanlyAllowed(d)).map(describeDecision);
}

// `node test/infra/iam/check.ts FILE…`: the check over logs written elsewhere (`npm run bench -- capacity
// --sent-requests FILE`, a bundle run): each request its function's role would refuse, one a line; exit 1 if any.
// Requests sent outside any function (a local host's start-up recovery, which AWS has no counterpart of) are
// counted apart.
if (import.meta.filename === process.argv[1]) {
  const { readFileSync } = await import('node:fs');
  const logs = process.argv.slice(2).map((file) => JSON.parse(readFileSync(file, 'utf8')) as SentRequests);
  if (logs.length === 0) throw new Error('usage: node test/infra/iam/check.ts FILE…');
  const attributed = logs.map((log) => ({ ...log, requests: log.requests.filter((r) => r.function !== 'unattributed') }));
  const outside = logs.reduce((n, log) => n + log.requests.filter((r) => r.function === 'unattributed').length, 0);
  const { requests, decisions } = await decideSent(attributed);
  const denied = decisions.filter((d) => !cleanlyAllowed(d));
  for (const d of denied) console.log(describeDecision(d));
  console.log(`${requests.length} IAM requests (${decisions.length} distinct) from ${attributed.reduce((n, l) => n + l.requests.length, 0)} AWS requests: ${denied.length} not allowed; ${outside} sent outside any function, not checked`);
  process.exitCode = denied.length > 0 ? 1 : 0;
}
