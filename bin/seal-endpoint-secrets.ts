#!/usr/bin/env node
// npm run seal-endpoint-secrets: encrypts, in place, the webhook endpoint secrets a stack stored in
// plaintext before they were encrypted (docs/operations.md, "Endpoint secrets"). It assembles;
// functions/webhooks/seal.ts decides. Runs with your AWS credentials against the stack's outputs.
import * as z from 'zod';
import { createAwsClients } from '../functions/platform/aws.ts';
import { systemClock } from '../functions/platform/clock.ts';
import { parseConfig } from '../functions/platform/config.ts';
import { KmsSecretKey } from '../functions/platform/secret-key.ts';
import { sealPlaintextSecrets } from '../functions/webhooks/seal.ts';
import { EndpointSecrets } from '../functions/webhooks/secrets.ts';
import { WebhookStore } from '../functions/webhooks/store.ts';

const env = parseConfig(z.object({ WEBHOOKS_TABLE: z.string().min(3), WEBHOOK_SECRETS_KEY_ARN: z.string().startsWith('arn:') }));
const clients = createAwsClients();
const report = await sealPlaintextSecrets(new WebhookStore(clients.dynamo, env.WEBHOOKS_TABLE), new EndpointSecrets(new KmsSecretKey(clients.kms, env.WEBHOOK_SECRETS_KEY_ARN), systemClock));
console.log(JSON.stringify(report));
