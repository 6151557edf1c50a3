import * as z from 'zod';
import { defaultPolicy, defineKind } from '../../jobs/index.ts';

/** calls.import's kind, as data (its handler: job.ts), apart so calls/kinds.ts lists it without the handler's imports. */

export const importArgs = z.object({
  batchId: z.string().min(1),
  /** Contacts staged. */
  total: z.number().int().min(1),
  /** Each staged chunk's first contact index, ascending (chunk k's items: staging.ts `stageKey`). */
  chunks: z.array(z.number().int().min(0)).min(1),
  pagesPerRun: z.number().int().min(1).max(200).optional(),
  pageDelayMs: z.number().int().min(0).max(60_000).optional(),
});
export type ImportArgs = z.infer<typeof importArgs>;

export const importKind = defineKind({
  kind: 'calls.import',
  queue: 'calls',
  policy: defaultPolicy,
  timeoutSeconds: 50,
  args: importArgs,
  description: 'Writes an Importing batch’s staged contacts as its round-1 list, a page per transaction, then sets it Pending with its dialer',
});

export const importJobId = (batchId: string): string => `calls.import:${batchId}`;

