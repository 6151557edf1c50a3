import type { Deployment, ResolvedStatement } from './deployment.ts';
import type { Decision } from './evaluate.ts';

/**
 * Granted against used: every action × resource each role's statements grant, and whether a decided
 * request (recorded, or implied by AWS) was allowed by that statement for that action on that resource.
 */

/** One action on one resource, as one statement grants it. */
export interface Grant {
  function: string;
  /** The statement (deployment.ts names them: policy and position). */
  sid: string;
  action: string;
  /** The resource pattern, as granted. */
  resource: string;
  /** How people say it (`table:webhooks`, `schedule:jobs/*`). */
  label: string;
  /** The statement's conditions, in short (`LeadingKeys=WAITLIST#*`). */
  conditions: string;
}

/** A grant and what used it. */
export interface GrantUse extends Grant {
  /** Where the requests it allowed came from (`DynamoDB.TransactWriteItems`, `implied: …`), each once. */
  usedBy: string[];
}

const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** Whether `arn` matches an IAM resource pattern (`*` any run of characters, `?` one). */
export const matchesPattern = (pattern: string, arn: string): boolean =>
  new RegExp(`^${pattern.split('').map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&'))).join('')}$`).test(arn);

/** A statement's conditions in one short line, keys without their service prefix. */
export function conditionsOf(statement: ResolvedStatement): string {
  return Object.values(statement.Condition ?? {})
    .flatMap((byKey) => Object.entries(byKey).map(([key, values]) => `${key.replace(/^[a-z0-9]+:/, '')}=${list(values).join('|')}`))
    .join('; ');
}

/** Every grant of every function's role (the roles AWS assumes for redial too, when asked). */
export function grantsOf(deployment: Deployment, principals: readonly string[] = Object.keys(deployment.functions)): Grant[] {
  return principals.flatMap((fn) =>
    deployment
      .statementsOf(fn)
      .filter((statement) => statement.Effect === 'Allow')
      .flatMap((statement) =>
        list(statement.Action).flatMap((action) =>
          list(statement.Resource).map((resource) => ({ function: fn, sid: statement.Sid!, action, resource, label: deployment.labelOf(resource), conditions: conditionsOf(statement) })),
        ),
      ),
  );
}

/** Each grant with the requests it allowed among `decisions`. */
export function usesOf(grants: readonly Grant[], decisions: readonly Decision[]): GrantUse[] {
  return grants.map((grant) => ({
    ...grant,
    usedBy: [
      ...new Set(
        decisions
          .filter((d) => d.result === 'Allowed' && d.request.function === grant.function && d.request.action === grant.action && d.allowedBy.includes(grant.sid) && matchesPattern(grant.resource, d.request.resource.arn))
          .map((d) => d.request.from),
      ),
    ].sort(),
  }));
}

/** The key a justification of an unused grant is filed under: `function action label`. */
export const grantKey = (g: Pick<Grant, 'function' | 'action' | 'label'>): string => `${g.function} ${g.action} ${g.label}`;
