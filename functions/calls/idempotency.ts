import { keyHash, requestHashOf } from '../platform/idempotency.ts';
import { batchIds } from './model.ts';
import type { BatchBody } from './schemas.ts';

/** Idempotent batch creation (`Idempotency-Key` on `POST /v1/batches`): see functions/platform/idempotency.ts. */

/** The batch id a tenant's key names: `b_<tenantId>.` and 32 hex characters, like a random one. */
export const batchIdForKey = (tenantId: string, key: string): string => batchIds.make(tenantId, keyHash(tenantId, key));

/** What a keyed batch request asked for: the sha256 of its validated body. */
export const requestHash = (body: BatchBody): string => requestHashOf(body);
