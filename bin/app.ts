#!/usr/bin/env node
// The CDK app (cdk.json runs it with Node 22, which strips the types). It assembles; lib/ decides.
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stackPropsFromContext } from '../lib/context.ts';
import { RedialStack, StackConfigurationError } from '../lib/redial-stack.ts';

const app = new App();
try {
  // cdk deploy -c callPlacerUrl=https://… -c mailDomain=… [-c alarmEmail=…] (lib/context.ts lists every key)
  new RedialStack(app, 'Redial', {
    description: 'redial: outbound calling campaigns with one owner of retries, the job layer',
    ...stackPropsFromContext((key) => app.node.tryGetContext(key)),
  });
} catch (error) {
  // Fail synth with the reason alone: a missing placer or mail domain is a configuration problem, not a bug.
  if (!(error instanceof StackConfigurationError)) throw error;
  console.error(error.message);
  process.exit(1);
}
// cdk-nag 3 is a policy-validation plugin (its v2 Aspect API is gone): any unacknowledged finding fails synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
