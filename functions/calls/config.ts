import * as z from 'zod';
import { ConfigError, parseConfig } from '../platform/config.ts';
import { isWebhookSecret } from './signature.ts';

/** The calls context's configuration, parsed once at start-up (cold start). */
export interface CallsConfig {
  /** Where the dialer asks for calls (`POST`, docs/calls.md "Configuration"). Unset in functions that do not dial. */
  placerUrl: string | undefined;
  /** The intake's public URL, handed to the placer as `callbackUrl`. Unset in functions that do not dial. */
  callbackUrl: string | undefined;
  /** The intake's Standard Webhooks secret. Unset in functions that do not serve the intake. */
  webhookSecret: string | undefined;
  /** A call with no result after this long is ended by its watchdog with TIMEOUT. */
  callTimeoutSeconds: number;
  /** How long the dialer waits for the placer to accept a call. */
  placerTimeoutMs: number;
  /** Dials per run of the dialer: a run must end well inside its job timeout, so it dials a bounded number and continues in the next. */
  dialsPerRun: number;
  /**
   * Contacts dialled in one transaction (a group): one write of the tenant's slot shard and of the batch row
   * for the group, so the batch's partition takes a fraction of a write per dial (docs/calls.md). Small,
   * because a group's calls are placed one after another after its commit: the last waits for the others.
   */
  dialGroup: number;
  /**
   * A dial run asks the placer for no call after this much real time: the calls of a group it dialled but
   * has no time left to place complete with INTERNAL_ERROR at once, so the run ends inside its 50 s job
   * timeout (kinds.ts) however slowly the placer answers.
   */
  placeBudgetMs: number;
  /** How long the dialer waits when the tenant has no free slot. */
  noSlotSnoozeMs: number;
}

/** The largest intake body accepted: a result with every artefact at its largest fits (artefacts.ts). */
export { INTAKE_MAX_BODY_BYTES_WITH_ARTEFACTS as INTAKE_MAX_BODY_BYTES } from './artefacts.ts';

export const DEFAULT_CALL_TIMEOUT_SECONDS = 600;

const webhookSecret = z.string().refine(isWebhookSecret, { message: 'expected a Standard Webhooks secret: whsec_ followed by base64 of at least 16 bytes' });

/** The environment variables of the calls context. */
export const callsEnv = z.object({
  CALL_PLACER_URL: z.url().optional(),
  CALL_WEBHOOK_URL: z.url().optional(),
  CALL_WEBHOOK_SECRET: webhookSecret.optional(),
  CALL_TIMEOUT_SECONDS: z.coerce.number().int().min(10).max(86_400).default(DEFAULT_CALL_TIMEOUT_SECONDS),
});

/** Defaults for the tuning knobs that have no environment variable. */
export const callsDefaults = { placerTimeoutMs: 10_000, dialsPerRun: 20, dialGroup: 5, placeBudgetMs: 35_000, noSlotSnoozeMs: 3_000 } as const;

/** The calls configuration from the environment; `overrides` win (a secret read from Secrets Manager, the local simulator's URL). */
export function callsConfigFromEnv(env: Record<string, string | undefined> = process.env, overrides: Partial<CallsConfig> = {}): CallsConfig {
  const parsed = parseConfig(callsEnv, env);
  return {
    placerUrl: parsed.CALL_PLACER_URL,
    callbackUrl: parsed.CALL_WEBHOOK_URL,
    webhookSecret: parsed.CALL_WEBHOOK_SECRET,
    callTimeoutSeconds: parsed.CALL_TIMEOUT_SECONDS,
    ...callsDefaults,
    ...overrides,
  };
}

/** Checks that a secret read from elsewhere (Secrets Manager) is one the verifier accepts; throws at cold start if not. */
export function checkWebhookSecret(secret: string): string {
  const result = webhookSecret.safeParse(secret);
  if (!result.success) throw new Error(`CALL_WEBHOOK_SECRET: ${result.error.issues[0]?.message ?? 'invalid'}`);
  return result.data;
}

/** Refuses, at cold start, a calls worker that could not dial: it needs the placer's URL and the intake's. */
export function requireDialling(config: CallsConfig): CallsConfig {
  const missing = [!config.placerUrl && 'CALL_PLACER_URL', !config.callbackUrl && 'CALL_WEBHOOK_URL'].filter(Boolean);
  if (missing.length) throw new ConfigError(`invalid configuration: ${missing.join(', ')} required to dial`);
  return config;
}
