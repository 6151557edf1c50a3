import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { MetricsSink } from '../platform/metrics.ts';
import type { ResolvedAddress, VettedRequest, VettedResponse } from '../platform/vetted-http.ts';
import type { JobClient } from '../jobs/index.ts';
import type { AttemptLog } from './attempt-log.ts';
import type { KeptEvents } from './kept-events.ts';
import type { LeaseTerms } from './lease.ts';
import type { OwnerMailPort } from './notices.ts';
import type { EndpointSecrets } from './secrets.ts';
import type { GuardOptions } from './ssrf.ts';
import type { WebhookStore } from './store.ts';

/** The HTTP client deliveries use: the vetted client of functions/platform, or a test's stand-in. */
export interface WebhookHttp {
  send(request: VettedRequest): Promise<VettedResponse>;
  vet(hostname: string): Promise<ResolvedAddress>;
}

/** What the webhooks context runs on. */
export interface WebhookDeps {
  store: WebhookStore;
  /** The attempt log: one item per attempt, kept 30 days (attempts.ts). */
  attemptLog: AttemptLog;
  /** Events kept 30 days for recovery (kept-events.ts). */
  keptEvents: KeptEvents;
  /** Endpoint signing secrets: encrypted at registration, decrypted to sign. */
  secrets: EndpointSecrets;
  jobs: JobClient;
  clock: Clock;
  /**
   * The clock `webhook-timestamp` is stamped with: the wall clock, since receivers check it against
   * theirs (Standard Webhooks allows 5 min). The same as `clock` except under a scaled local clock.
   */
  wallClock: Clock;
  logger: Logger;
  metrics: MetricsSink;
  http: WebhookHttp;
  guard: GuardOptions;
  /** One attempt's whole exchange (resolve, connect, answer) must finish within this. */
  requestTimeoutMs: number;
  /** How long a delivery that succeeded goes on sending the deliveries waiting behind it (delivery.ts, the drain), in clock ms. */
  drainBudgetMs: number;
  /** The endpoint lease's length and what a holder needs left of it to start a send, on `clock` (lease.ts). */
  lease: LeaseTerms;
  /** The owner mail an endpoint's disabling sends (the mail context's, wired by the app); none without it. */
  ownerMail?: OwnerMailPort;
}
