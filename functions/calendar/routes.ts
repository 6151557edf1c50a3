import { withErrors } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { CalendarDeps } from './deps.ts';
import { calendarHttpError, settingsRoutes } from './settings-api.ts';

/**
 * Every route of the calendar context (the module's `routes`). A file of its own, apart from the job
 * handlers that module.ts also lists, so that the functions serving routes bundle no job's code.
 */
export const calendarContextRoutes = (deps: () => CalendarDeps): ApiRoute[] => [
  ...withErrors(calendarHttpError, [
    ...settingsRoutes(deps),
    // ...toolRoutes(deps) — the agent's tools (tools-api.ts)
  ]),
];
