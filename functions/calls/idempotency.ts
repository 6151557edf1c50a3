import { idForKey, requestHashOf } from '../platform/idempotency.ts';
import type { BatchBody } from './schemas.ts';

/** Idempotent batch creation (`Idempotency-Key` on `POST /v1/batches`): see functions/platform/idempotency.ts. */

/** The batch id a tenant's key names: `b_` and 32 hex characters, like a random one. */
export const batchIdForKey = (tenantId: string, key: string): string => idForKey('b', tenantId, key);

/** What a keyed batch request asked for: the sha256 of its validated body. */
export const requestHash = (body: BatchBody): string => requestHashOf(body);
