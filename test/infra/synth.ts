import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import type { CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { RedialStack } from '../../lib/redial-stack.ts';
import type { RedialStackProps } from '../../lib/redial-stack.ts';

export const root = join(import.meta.dirname, '..', '..');

export const PLACER_URL = 'https://placer.example.com/calls';

/** The least a stack needs: a call placer and a mail domain. */
export const BASE_PROPS: RedialStackProps = { callPlacerUrl: PLACER_URL, mail: { domain: 'mail.example.org' } };

export interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  DependsOn?: string[];
}

export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
  Principal?: unknown;
}

export type Intrinsic = string | { Ref: string } | { 'Fn::GetAtt': [string, string] } | { 'Fn::Join': [string, Intrinsic[]] };

/**
 * The app as `cdk synth` builds it (cdk.json's feature flags), without bundling and without CDK's built-in
 * CloudFormation validation (a WASM engine that takes seconds to start; `npm run synth` still runs it).
 */
export function newApp(): App {
  const { context } = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> };
  return new App({ context: { ...context, 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
}

export const actionsOf = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);
export const resourcesOf = (s: Statement): unknown[] => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

/** A synthesized stack (after `change`, if given) and the small readers the infra tests share. */
export function synth(props: Partial<RedialStackProps> = {}, app: App = newApp(), change?: (stack: RedialStack) => void) {
  const stack = new RedialStack(app, 'RedialTest', { ...BASE_PROPS, ...props });
  change?.(stack);
  const template = Template.fromStack(stack);
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const idOf = (construct: IConstruct): string => stack.getLogicalId((construct.node.defaultChild ?? construct) as CfnElement);
  const ofType = (type: string): [string, Resource][] => Object.entries(resources).filter(([, r]) => r.Type === type);
  /** The statements of every policy attached to a role. */
  const roleStatements = (roleId: string): Statement[] =>
    ofType('AWS::IAM::Policy')
      .filter(([, p]) => (p.Properties['Roles'] as { Ref: string }[]).some((r) => r.Ref === roleId))
      .flatMap(([, p]) => (p.Properties['PolicyDocument'] as { Statement: Statement[] }).Statement);
  const roleOf = (fn: Resource): string => (fn.Properties['Role'] as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  const envOf = (fnId: string): Record<string, Intrinsic> => (resources[fnId]?.Properties['Environment'] as { Variables: Record<string, Intrinsic> }).Variables;
  return { app, stack, template, resources, idOf, ofType, roleStatements, roleOf, envOf };
}

/** Stands a CloudFormation value in for what it becomes at deploy time: a queue URL, an ARN, a name. */
export function fakeResolve(value: Intrinsic): string {
  if (typeof value === 'string') return value;
  if ('Ref' in value) return `https://sqs.eu-west-1.amazonaws.com/123456789012/${value.Ref}`;
  if ('Fn::GetAtt' in value) return `arn:aws:test:eu-west-1:123456789012:${value['Fn::GetAtt'][0]}`;
  return value['Fn::Join'][1].map(fakeResolve).join(value['Fn::Join'][0]);
}
