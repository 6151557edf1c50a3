import type { Clock } from '../platform/clock.ts';
import type { EncryptionContext, SecretKey } from '../platform/secret-key.ts';
import { googleCredentialsSchema } from './schemas.ts';
import type { GoogleCredentials } from './port.ts';

/** How long opened credentials stay in a container's memory: the tool routes of one calendar within it ask KMS once. */
export const CREDENTIALS_CACHE_MS = 5 * 60_000;

/** How many opened credentials a container keeps at most (the oldest goes first). */
export const CREDENTIALS_CACHE_ENTRIES = 1000;

/** KMS encrypts at most 4 KB of plaintext; the credentials' JSON must fit. */
export const MAX_SEALED_PLAINTEXT_BYTES = 4096;

/** The encryption context's keys: lib/redial-stack.ts lets the functions use the key for calendars only with exactly these. */
export const CALENDAR_CONTEXT_KEYS = ['calendarId', 'tenantId'] as const;

/** What a calendar's credentials' ciphertext is bound to: the calendar and its tenant. */
export const calendarContextOf = (tenantId: string, calendarId: string): EncryptionContext =>
  ({ calendarId, tenantId }) satisfies Record<(typeof CALENDAR_CONTEXT_KEYS)[number], string>;

/**
 * A calendar's provider credentials at rest, sealed exactly as webhook endpoint secrets are
 * (functions/webhooks/secrets.ts): encrypted with the host's {@link SecretKey} (KMS on AWS, a local key
 * elsewhere), bound to the calendar and its tenant by the encryption context, so a ciphertext copied to
 * another calendar's item (or another tenant's) does not open there. Never returned by any route.
 *
 * Opened credentials are kept in memory for {@link CREDENTIALS_CACHE_MS}, by ciphertext: a tool route
 * spends its 2.5 s budget on the calendar, not on KMS.
 */
export class CalendarCredentials {
  private readonly key: SecretKey;
  private readonly clock: Clock;
  private readonly cache = new Map<string, { credentials: GoogleCredentials; until: number }>();

  constructor(key: SecretKey, clock: Clock) {
    this.key = key;
    this.clock = clock;
  }

  /** The plaintext that is sealed: the credentials' JSON (its size is checked by the PUT route against {@link MAX_SEALED_PLAINTEXT_BYTES}). */
  static plaintextOf(credentials: GoogleCredentials): string {
    return JSON.stringify({ clientId: credentials.clientId, clientSecret: credentials.clientSecret, refreshToken: credentials.refreshToken });
  }

  /** The stored form of a calendar's credentials. */
  seal(tenantId: string, calendarId: string, credentials: GoogleCredentials): Promise<string> {
    return this.key.encrypt(CalendarCredentials.plaintextOf(credentials), calendarContextOf(tenantId, calendarId));
  }

  /** The credentials a stored ciphertext holds (decrypted, or remembered). */
  async open(tenantId: string, calendarId: string, sealed: string): Promise<GoogleCredentials> {
    const now = this.clock.now();
    const cached = this.cache.get(sealed);
    if (cached && cached.until > now) return cached.credentials;
    const credentials = googleCredentialsSchema.parse(JSON.parse(await this.key.decrypt(sealed, calendarContextOf(tenantId, calendarId))));
    this.cache.delete(sealed);
    if (this.cache.size >= CREDENTIALS_CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(sealed, { credentials, until: now + CREDENTIALS_CACHE_MS });
    return credentials;
  }
}
