import { fromNodeProviderChain } from '@aws-sdk/credential-providers';

/** AWS credentials as a request signer needs them. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** Resolves credentials when first needed (and again when they expire). */
export type CredentialProvider = () => Promise<AwsCredentials>;

/**
 * The AWS SDK's default credential chain (environment, SSO, web identity, shared files, process,
 * container and instance metadata), built here because it builds clients of its own (STS, SSO, IMDS):
 * like every client redial makes, they send each request once (`maxAttempts: 1`; IMDS `maxRetries: 0`).
 * Nothing is read until the provider is called.
 */
export function defaultCredentialChain(): CredentialProvider {
  return fromNodeProviderChain({ maxRetries: 0, clientConfig: { maxAttempts: 1 } });
}
