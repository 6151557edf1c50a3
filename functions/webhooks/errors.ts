import type { EndpointRow } from './endpoint.ts';

/** Base of every webhooks-context error. */
export class WebhooksError extends Error {
  override readonly name: string = 'WebhooksError';
}

/** No endpoint has this id. */
export class EndpointNotFoundError extends WebhooksError {
  override readonly name = 'EndpointNotFoundError';
  readonly endpointId: string;
  constructor(endpointId: string, options?: { cause?: unknown }) {
    super(`endpoint ${endpointId} not found`, options);
    this.endpointId = endpointId;
  }
}

/** Redeliver was asked of a disabled endpoint: enable it first, or every delivery is discarded again. */
export class EndpointDisabledError extends WebhooksError {
  override readonly name = 'EndpointDisabledError';
  readonly endpointId: string;
  constructor(endpointId: string, options?: { cause?: unknown }) {
    super(`endpoint ${endpointId} is disabled; enable it before redelivering`, options);
    this.endpointId = endpointId;
  }
}

/**
 * An endpoint with this id exists: a retried keyed registration (the id follows from its Idempotency-Key),
 * or a random id generated twice (practically impossible; refused rather than overwritten). `existing`
 * is the stored row, when DynamoDB returned it.
 */
export class EndpointExistsError extends WebhooksError {
  override readonly name = 'EndpointExistsError';
  readonly endpointId: string;
  readonly existing: EndpointRow | undefined;
  constructor(endpointId: string, existing: EndpointRow | undefined, options?: { cause?: unknown }) {
    super(`endpoint ${endpointId} already exists`, options);
    this.endpointId = endpointId;
    this.existing = existing;
  }
}

/** A registration's Idempotency-Key was used before with a different body (or by another tenant): nothing written. */
export class IdempotencyKeyReusedError extends WebhooksError {
  override readonly name = 'IdempotencyKeyReusedError';
}

/** The SSRF guard refused an endpoint URL at registration; `reason` says why, for the 400 answer. */
export class UrlRefusedError extends WebhooksError {
  override readonly name = 'UrlRefusedError';
  readonly reason: string;
  constructor(reason: string, options?: { cause?: unknown }) {
    super(`URL refused: ${reason}`, options);
    this.reason = reason;
  }
}

/** Two rotations of one endpoint's secret at once: this one lost (nothing written); rotate again to get a secret that signs. */
export class EndpointRotatedMeanwhileError extends WebhooksError {
  override readonly name = 'EndpointRotatedMeanwhileError';
  readonly endpointId: string;
  constructor(endpointId: string, options?: { cause?: unknown }) {
    super(`endpoint ${endpointId} was rotated by another request meanwhile; nothing written`, options);
    this.endpointId = endpointId;
  }
}

/** A delivery attempt failed (5xx, 408, 429 without Retry-After, 3xx, timeout, connection failure): retryable. */
export class DeliveryFailedError extends WebhooksError {
  override readonly name = 'DeliveryFailedError';
}
