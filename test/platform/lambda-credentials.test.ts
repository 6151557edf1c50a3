import { describe, expect, it } from 'vitest';
import { defaultProvider } from '../../functions/platform/lambda-credentials.ts';

// What every Lambda bundle's SDK clients resolve credentials with (lib/constructs/function.ts aliases the
// default chain to it): the environment, where Lambda puts the execution role's credentials.
describe('the Lambda bundles’ credential provider', () => {
  const env = { ...process.env };
  const restore = () => {
    for (const key of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN']) {
      if (env[key] === undefined) delete process.env[key];
      else process.env[key] = env[key];
    }
  };

  it('ReadsTheRolesCredentialsFromTheEnvironmentAsLambdaSetsThem', async () => {
    process.env['AWS_ACCESS_KEY_ID'] = 'ASIAEXAMPLE';
    process.env['AWS_SECRET_ACCESS_KEY'] = 'secret';
    process.env['AWS_SESSION_TOKEN'] = 'token';
    try {
      await expect(defaultProvider()()).resolves.toMatchObject({ accessKeyId: 'ASIAEXAMPLE', secretAccessKey: 'secret', sessionToken: 'token' });
    } finally {
      restore();
    }
  });

  it('RefusesWhenTheEnvironmentHasNoneInsteadOfLookingElsewhere', async () => {
    delete process.env['AWS_ACCESS_KEY_ID'];
    delete process.env['AWS_SECRET_ACCESS_KEY'];
    try {
      await expect(defaultProvider()()).rejects.toThrow(/environment variable credentials/);
    } finally {
      restore();
    }
  });
});
