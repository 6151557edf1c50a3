import { defineModule } from '../jobs/index.ts';
import { opsQueues } from './queues.ts';
import { jobRoutes } from './jobs-api.ts';
import type { OpsDeps } from './jobs-api.ts';
import { probeHandler, probeKind } from './probe.ts';

export type { OpsDeps } from './jobs-api.ts';

/**
 * The ops context: the ops API over the job layer (list, show, retry, cancel, counts, the policy table)
 * and its own kind, ops.probe, on its own queue.
 */
export const opsModule = defineModule({
  name: 'ops',
  tables: {},
  queues: opsQueues,
  kinds: [probeKind],
  handlers: (_deps: OpsDeps) => [probeHandler],
  routes: (deps: () => OpsDeps) => jobRoutes(deps),
});
