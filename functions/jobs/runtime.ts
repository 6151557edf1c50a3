import type { JobHandler } from './kinds.ts';
import { assembleJobClient } from './client-runtime.ts';
import type { JobClientRuntime, JobRuntimeDeps } from './client-runtime.ts';
import { Executor } from './executor.ts';
import { Rescuer } from './rescuer.ts';
import type { RescuerOptions } from './rescuer.ts';
import { createWorker } from './worker.ts';
import type { RecordHook } from './worker.ts';

export type { JobClientRuntime, JobRuntimeDeps } from './client-runtime.ts';

/** The job layer, assembled. Entry points (Lambda or local) build one and take what they need. */
export interface JobRuntime extends JobClientRuntime {
  executor(queue: string, handlers: readonly JobHandler<unknown>[]): Executor;
  /** The SQS handler for one queue's kinds (`aroundRecord`: a host's hook around each record's run). */
  worker(queue: string, handlers: readonly JobHandler<unknown>[], aroundRecord?: RecordHook): ReturnType<typeof createWorker>;
  /**
   * The rescuer over every handler the system runs: their kinds' policies price lost attempts; their hooks
   * run on its discards. Its rescue delay is the runtime's unless given.
   */
  rescuer(handlers: readonly JobHandler<unknown>[], rescueAfterMs?: number, options?: Pick<RescuerOptions, 'budgetMs' | 'elapsed' | 'pageSize' | 'concurrency'>): Rescuer;
}

/** The job layer with its runners (executor, worker, rescuer) over the client's parts; hosts that run no job build {@link JobClientRuntime} alone. */
export function createJobRuntime(deps: JobRuntimeDeps): JobRuntime {
  const { store, dispatcher, client, counts, changes, listing, watermarks, handlers, rescueAfterMs, tracing, spec } = assembleJobClient(deps);
  const register = (list: readonly JobHandler<unknown>[]) => {
    for (const h of list) handlers.set(h.kind.kind, h);
    return new Map(list.map((h) => [h.kind.kind, h]));
  };
  const executor = (queue: string, list: readonly JobHandler<unknown>[]) => {
    for (const h of list) {
      if (h.kind.queue !== queue) throw new Error(`kind ${h.kind.kind} belongs to queue ${h.kind.queue}, not ${queue}`);
    }
    return new Executor({ store, changes, clock: deps.clock, rng: deps.rng, logger: deps.logger, tracing, queue: { name: queue, spec: spec(queue) }, handlers: register(list) });
  };
  return {
    store,
    dispatcher,
    client,
    counts,
    changes,
    executor,
    worker: (queue, list, aroundRecord) => createWorker({ executor: executor(queue, list), counts, logger: deps.logger, queue, ...(aroundRecord ? { aroundRecord } : {}) }),
    rescuer: (list, ownDelay, options = {}) => {
      register(list);
      return new Rescuer({
        store,
        client,
        changes,
        counts,
        listing,
        watermarks,
        db: deps.db,
        clock: deps.clock,
        rng: deps.rng,
        logger: deps.logger,
        kinds: list.map((h) => h.kind),
        rescueAfterMs: ownDelay ?? rescueAfterMs,
        ...options,
      });
    },
  };
}
