import type { OpsDeps } from '../../ops/module.ts';
import { allKinds } from '../catalog.ts';
import type { SystemHost } from '../host.ts';

/** The ops context over a host: the job layer's listings and retries, every kind's policy. */
export function buildOps(host: SystemHost): OpsDeps {
  return { jobs: host.jobs.client, kinds: allKinds, periodicStatus: (kind) => host.jobs.store.getPeriodic(kind) };
}
