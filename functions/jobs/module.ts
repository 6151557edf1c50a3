import type { ApiRoute } from '../platform/http.ts';
import type { TableDefinition } from '../platform/tables.ts';
import type { JobHandler, JobKind } from './kinds.ts';
import type { QueueSpec } from './queues.ts';

/**
 * A bounded context as the composition root (functions/app) sees it: one declaration per context
 * (functions/<context>/module.ts). Everything in it but `handlers` and `routes` is data, readable without
 * building anything; `routes` takes its dependencies as a function, so listing the routes (CDK, the
 * OpenAPI document) needs no configuration and no I/O.
 *
 * @example
 * export const reportsModule = defineModule({
 *   name: 'reports', tables: { reports: reportsTable }, queues: { reports: { timeoutSeconds: 60, batchSize: 10, maxConcurrency: 2 } },
 *   kinds: [renderKind], handlers: (deps: ReportsDeps) => [renderHandler(deps)], routes: (deps) => reportRoutes(deps),
 * });
 */
export interface ContextModule<
  D,
  N extends string = string,
  T extends Readonly<Record<string, TableDefinition>> = Readonly<Record<string, TableDefinition>>,
  Q extends Readonly<Record<string, QueueSpec>> = Readonly<Record<string, QueueSpec>>,
> {
  readonly name: N;
  /** The tables it owns, by logical name (CDK and the local host create them from these). */
  readonly tables: T;
  /** The job queues it owns, by name: each is one SQS queue and one worker function on AWS. */
  readonly queues: Q;
  /** Its job kinds, each with its policy, queue and discard reasons. */
  readonly kinds: readonly JobKind<unknown>[];
  /** The code that runs its kinds, one handler per kind. */
  handlers(deps: D): readonly JobHandler<unknown>[];
  /** Its HTTP routes; `deps` is called on a request, never while listing. */
  routes(deps: () => D): readonly ApiRoute[];
}

/**
 * Declares a context module; refuses, at load time, a kind on a queue the module does not own and a
 * kind declared twice.
 */
export function defineModule<D, const N extends string, const T extends Readonly<Record<string, TableDefinition>>, const Q extends Readonly<Record<string, QueueSpec>>>(
  module: ContextModule<D, N, T, Q>,
): ContextModule<D, N, T, Q> {
  const seen = new Set<string>();
  for (const kind of module.kinds) {
    if (!(kind.queue in module.queues)) throw new Error(`module ${module.name}: kind ${kind.kind} runs on queue "${kind.queue}", which the module does not declare`);
    if (seen.has(kind.kind)) throw new Error(`module ${module.name}: kind ${kind.kind} declared twice`);
    seen.add(kind.kind);
  }
  return module;
}
