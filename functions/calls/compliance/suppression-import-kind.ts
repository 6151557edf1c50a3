import * as z from 'zod';
import { defaultPolicy, defineKind } from '../../jobs/index.ts';
import { ownedIds } from '../../platform/tenancy.ts';

/** calls.suppressions.import's kind, as data (its handler: suppression-import.ts), apart so calls/kinds.ts lists it without the handler's imports. */

/** A suppression import's id: `si_<tenantId>.<32 hex>`, naming its tenant as a batch id does. */
export const suppressionImportIds = ownedIds('si', 'a suppression import');

export const suppressionImportArgs = z.object({ importId: suppressionImportIds.schema });
export type SuppressionImportArgs = z.infer<typeof suppressionImportArgs>;

export const suppressionImportKind = defineKind({
  kind: 'calls.suppressions.import',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 50,
  args: suppressionImportArgs,
  description: 'Writes a suppression CSV’s staged entries onto the tenant’s suppression list, a chunk at a time (entry + audit record per number)',
});

export const suppressionImportJobId = (importId: string): string => `calls.suppressions.import:${importId}`;
