import { createHash, randomBytes as cryptoRandomBytes } from 'node:crypto';

/**
 * Link tokens: single-use, expiring, unguessable. A token is 32 random bytes from the operating system's
 * CSPRNG, base64url (43 characters). Its SHA-256 is what links are checked against; the raw token waits on
 * the mail row only until its mail is sent (store.ts). A link is checked by hashing what it carries and
 * comparing inside a conditional write, which also consumes it, so a link changes state at most once. (A
 * fast hash is enough: the input has 256 bits of entropy, there is nothing to brute-force.)
 *
 * Not the seeded {@link Rng} of the job layer: that is a Mersenne Twister, predictable from its output.
 */
export type RandomBytes = (size: number) => Buffer;

/** The operating system's CSPRNG. */
export const secureRandomBytes: RandomBytes = (size) => cryptoRandomBytes(size);

export const TOKEN_BYTES = 32;

/** How long a link stays valid. */
export const TOKEN_TTL_MS = {
  /** A confirmation link for a new owner address. */
  emailConfirmation: 24 * 3600_000,
  /** Approve and deny links of an access request. */
  accessRequest: 7 * 86400_000,
} as const;

/** A fresh token: the raw value goes into the mail, only the hash is stored. */
export function newToken(random: RandomBytes = secureRandomBytes): { token: string; hash: string } {
  const token = random(TOKEN_BYTES).toString('base64url');
  return { token, hash: hashToken(token) };
}

/** SHA-256 of a token, hex. */
export const hashToken = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

/** Whether a string has the shape of a token (43 base64url characters); anything else is refused unhashed. */
export const looksLikeToken = (value: string): boolean => /^[A-Za-z0-9_-]{43}$/.test(value);

/** A random identifier with a prefix (`conf_…`, `areq_…`): 16 random bytes, hex. */
export const newId = (prefix: string, random: RandomBytes = secureRandomBytes): string => `${prefix}_${random(16).toString('hex')}`;
