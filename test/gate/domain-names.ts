import { modules } from '../../functions/app/system.ts';
import { JobDiscardReason } from '../../functions/jobs/outcomes.ts';
import type { DomainNames } from './structure-gate.ts';

/**
 * The names the contexts declare, read from their modules (functions/app/system.ts): every kind, every
 * queue, table and context name but the job layer's own `jobs`, and every discard reason a kind declares
 * (the job layer's own reasons are its vocabulary, not the domain's).
 */
export function domainNames(): DomainNames {
  const unique = (values: string[]) => [...new Set(values)].sort();
  return {
    kinds: unique(modules.flatMap((m) => m.kinds.map((k) => k.kind))),
    queues: unique(modules.flatMap((m) => [m.name, ...Object.keys(m.queues), ...Object.keys(m.tables)])).filter((name) => name !== 'jobs'),
    reasons: unique(modules.flatMap((m) => m.kinds.flatMap((k) => [...k.discardReasons]))).filter((r) => !(r in JobDiscardReason)),
  };
}
