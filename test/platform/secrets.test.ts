import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { createAwsClients, readSecretString } from '../../functions/platform/aws.ts';

const secrets = mockClient(SecretsManagerClient);
afterEach(() => secrets.reset());

describe('Secrets Manager client: built in functions/platform, sent once', () => {
  it('IsBuiltWithItsOwnRetriesOff', async () => {
    const clients = createAwsClients({ region: 'eu-west-1', credentials: { accessKeyId: 'a', secretAccessKey: 'b' } });
    expect(await clients.secrets.config.maxAttempts()).toBe(1);
  });

  it('ReadsTheStringValueAndRefusesASecretWithout', async () => {
    const client = new SecretsManagerClient({ region: 'eu-west-1', maxAttempts: 1 });
    secrets.on(GetSecretValueCommand, { SecretId: 'with' }).resolves({ SecretString: 'whsec_abc' });
    secrets.on(GetSecretValueCommand, { SecretId: 'binary' }).resolves({ SecretBinary: new Uint8Array([1]) });
    expect(await readSecretString(client, 'with')).toBe('whsec_abc');
    await expect(readSecretString(client, 'binary')).rejects.toThrow(/no string value/);
    expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });
});
