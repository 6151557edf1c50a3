#!/usr/bin/env node
// The CDK app (cdk.json runs it with Node 22, which strips the types). It assembles; lib/ decides.
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { RedialStack } from '../lib/redial-stack.ts';

const app = new App();
const alarmEmail: unknown = app.node.tryGetContext('alarmEmail');
const callPlacerUrl: unknown = app.node.tryGetContext('callPlacerUrl');
if (typeof callPlacerUrl !== 'string' || !callPlacerUrl) {
  console.warn('No call placer: the calls worker will refuse to start. Deploy with -c callPlacerUrl=https://… to dial.');
}
new RedialStack(app, 'Redial', {
  description: 'redial: outbound calling campaigns with one owner of retries, the job layer',
  ...(typeof alarmEmail === 'string' && alarmEmail ? { alarmEmail } : {}),
  ...(typeof callPlacerUrl === 'string' && callPlacerUrl ? { callPlacerUrl } : {}),
});
// cdk-nag 3 is a policy-validation plugin (its v2 Aspect API is gone): any unacknowledged finding fails synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
