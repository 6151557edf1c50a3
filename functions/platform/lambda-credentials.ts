import { fromEnv } from '@aws-sdk/credential-providers';

/**
 * The SDK clients' default credential provider as the Lambda bundles have it: lib/constructs/function.ts
 * aliases `@aws-sdk/credential-provider-node` (the default chain, which every client's runtime
 * configuration imports) to this module. Lambda gives a function its execution role's credentials in
 * AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN: the first place the default chain looks,
 * where it always finds them there. The rest of the chain (SSO, shared files, process, web identity,
 * container and instance metadata, with STS, SSO and sign-in clients of their own: ≈ 110 KB of every
 * bundle) never ran in a Lambda. Only the bundles are aliased; the local host, the CLI and the tests keep
 * the whole chain (./credentials.ts).
 */
export const defaultProvider = (init: Parameters<typeof fromEnv>[0] = {}): ReturnType<typeof fromEnv> => fromEnv(init);
