#!/usr/bin/env node
// The CDK app (cdk.json runs it with Node 22, which strips the types). It assembles; lib/ decides.
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { RedialStack } from '../lib/redial-stack.ts';

const app = new App();
const context = (key: string): string | undefined => {
  const value: unknown = app.node.tryGetContext(key);
  return typeof value === 'string' && value ? value : undefined;
};
const alarmEmail = context('alarmEmail');
const callPlacerUrl = context('callPlacerUrl');
if (!callPlacerUrl) {
  console.warn('No call placer: the calls worker will refuse to start. Deploy with -c callPlacerUrl=https://… to dial.');
}
const mailDomain = context('mailDomain');
if (!mailDomain) {
  console.warn('No mail domain: mail is sent as example.com through SES and will be refused. Deploy with -c mailDomain=… (an SES-verified identity) to send mail.');
}
new RedialStack(app, 'Redial', {
  description: 'redial: outbound calling campaigns with one owner of retries, the job layer',
  ...(alarmEmail ? { alarmEmail } : {}),
  ...(callPlacerUrl ? { callPlacerUrl } : {}),
  // cdk deploy -c mailDomain=mail.example.org [-c mailFrom=...] [-c sesIdentity=...] [-c sesConfigurationSet=...] [-c publicBaseUrl=...]
  ...(mailDomain
    ? {
        mail: {
          domain: mailDomain,
          ...(context('mailFrom') ? { from: context('mailFrom')! } : {}),
          ...(context('sesIdentity') ? { sesIdentity: context('sesIdentity')! } : {}),
          ...(context('sesConfigurationSet') ? { configurationSet: context('sesConfigurationSet')! } : {}),
          ...(context('publicBaseUrl') ? { publicBaseUrl: context('publicBaseUrl')! } : {}),
        },
      }
    : {}),
});
// cdk-nag 3 is a policy-validation plugin (its v2 Aspect API is gone): any unacknowledged finding fails synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
