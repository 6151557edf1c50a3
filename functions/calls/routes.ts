import { withErrors } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { callsHttpError, callsRoutes } from './api.ts';
import { keyRoutes } from './keys-api.ts';
import type { CallsDeps } from './deps.ts';
import { importRoutes } from './imports/routes.ts';
import { controlRoutes } from './control/routes.ts';
import { suppressionRoutes } from './compliance/suppression-api.ts';

/**
 * Every route of the calls context (the module's `routes`). A file of its own, apart from the job handlers
 * that module.ts also lists, so that the functions serving routes bundle no job's code.
 */
export const callsContextRoutes = (deps: () => CallsDeps): ApiRoute[] => [
  ...callsRoutes(deps),
  ...withErrors(callsHttpError, [...keyRoutes(deps), ...importRoutes(deps), ...controlRoutes(deps), ...suppressionRoutes(deps)]),
];
