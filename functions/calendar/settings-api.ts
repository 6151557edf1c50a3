import * as z from 'zod';
import { IncompleteReadError, InvalidCursorError } from '../platform/dynamo.ts';
import { HttpError, notFound, queryInt, tenantRoute, unavailable } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { CalendarCredentials, MAX_SEALED_PLAINTEXT_BYTES } from './credentials.ts';
import type { CalendarDeps } from './deps.ts';
import { calendarBody, calendarParams, calendarResponse, calendarView } from './schemas.ts';
import { storedOf } from './settings-store.ts';

/**
 * A tenant's calendars (docs/appointments.md, "Calendar settings"), tenant routes: the tenant is the API
 * key's, and every key is built from it (model.ts), so another tenant's calendar is not found (404).
 * Credentials are sealed before they are stored (credentials.ts) and never returned: every answer is
 * built by `calendarView`, field by field.
 */

/** The calendar context's one map from its domain errors to HTTP answers. */
export function calendarHttpError(error: unknown): HttpError | undefined {
  if (error instanceof InvalidCursorError) return new HttpError(400, 'invalid_request', 'invalid query', { issues: [{ path: 'query.cursor', message: error.message }] });
  if (error instanceof IncompleteReadError) return unavailable();
  return undefined;
}

const invalidBody = (path: string, message: string) => new HttpError(400, 'invalid_request', 'invalid body', { issues: [{ path, message }] });

const listQuery = z.object({
  limit: queryInt(1, 100).optional().describe('calendars per page, 1–100 (default 100)'),
  cursor: z.string().max(2000).optional().describe('the `cursor` of the previous page'),
});

export function settingsRoutes(calendar: () => CalendarDeps): ApiRoute[] {
  const put = tenantRoute({
    method: 'PUT',
    path: '/v1/calendars/{calendarId}',
    summary:
      'Create or update one of your calendars: its provider, bookable hours in its zone, and (required when creating it, optional after) its credentials — stored encrypted, never returned, not checked against the provider here',
    params: calendarParams,
    body: calendarBody,
    responses: {
      200: { description: 'the calendar as stored (`credentialsStored`, never the credentials)', schema: calendarResponse },
      400: { description: 'an invalid body (each refusal names its field), or `body.credentials` missing for a new calendar; nothing written' },
      503: { description: 'another write held the calendar, or credentials cannot be encrypted here; nothing written, try again' },
    },
    handler: async ({ params, body, scope }) => {
      const deps = calendar();
      let sealed: string | undefined;
      if (body.credentials) {
        if (Buffer.byteLength(CalendarCredentials.plaintextOf(body.credentials), 'utf8') > MAX_SEALED_PLAINTEXT_BYTES) {
          throw invalidBody('body.credentials', `the credentials take more than ${MAX_SEALED_PLAINTEXT_BYTES} bytes as JSON`);
        }
        if (!deps.credentials) throw unavailable('calendar credentials cannot be encrypted by this function; nothing was written');
        sealed = await deps.credentials.seal(scope.tenantId, params.calendarId, body.credentials);
      } else if ((await deps.settings.getIn(scope, params.calendarId))?.sealedCredentials === undefined) {
        // Refused before any write is sent; the write's own condition covers a delete in between.
        throw invalidBody('body.credentials', 'required: there is no such calendar with credentials yet');
      }
      const settings = { provider: body.provider, providerCalendarId: body.providerCalendarId, timezone: body.timezone, bookableHours: body.bookableHours };
      const outcome = await deps.settings.put(scope, params.calendarId, settings, sealed, deps.clock.now());
      if (!outcome.committed) {
        if (outcome.reason === 'credentials_required') throw invalidBody('body.credentials', 'required: there is no such calendar with credentials yet');
        throw unavailable();
      }
      return { status: 200, body: calendarView(outcome.stored) };
    },
  });

  const get = tenantRoute({
    method: 'GET',
    path: '/v1/calendars/{calendarId}',
    summary: 'One of your calendars (never its credentials: `credentialsStored` says whether some are)',
    params: calendarParams,
    responses: { 200: { description: 'the calendar', schema: calendarResponse }, 404: { description: 'no such calendar (or not yours)' } },
    handler: async ({ params, scope }) => {
      const record = await calendar().settings.getIn(scope, params.calendarId);
      if (!record) throw notFound(`calendar ${params.calendarId}`);
      return { status: 200, body: calendarView(storedOf(record)) };
    },
  });

  const list = tenantRoute({
    method: 'GET',
    path: '/v1/calendars',
    summary: 'Your calendars in id order, a page at a time',
    query: listQuery,
    responses: {
      200: { description: 'up to `limit` calendars; `cursor`, when present, asks for the next page', schema: z.object({ calendars: z.array(calendarResponse), cursor: z.string().optional() }) },
      400: { description: 'a bad limit, or a cursor this listing did not give out (to you)' },
    },
    handler: async ({ query, scope }) => {
      const page = await calendar().settings.list(scope, query.limit ?? 100, query.cursor);
      return { status: 200, body: { calendars: page.calendars.map((record) => calendarView(storedOf(record))), ...(page.cursor ? { cursor: page.cursor } : {}) } };
    },
  });

  const remove = tenantRoute({
    method: 'DELETE',
    path: '/v1/calendars/{calendarId}',
    summary: 'Delete one of your calendars (its credentials with it); refused while a live batch (not Finalised, Cancelled or Deleted) books into it',
    params: calendarParams,
    responses: {
      200: { description: 'the calendar as it was', schema: calendarResponse },
      404: { description: 'no such calendar (or not yours)' },
      409: { description: '`{error: "calendar_in_use", message, batchIds}`: live batches name it in their `appointments`; nothing deleted' },
      503: { description: 'a batch named the calendar while it was being deleted, or another write held it; nothing deleted, try again' },
    },
    handler: async ({ params, scope }) => {
      const deps = calendar();
      const record = await deps.settings.getIn(scope, params.calendarId);
      if (!record) throw notFound(`calendar ${params.calendarId}`);
      const live = record.batchIds.length > 0 ? await deps.ports.batches.live(scope.tenantId, record.batchIds) : [];
      if (live.length > 0) {
        // The finished ones need not be checked again: pruned if nothing changed meanwhile (harmless if not).
        const finished = record.batchIds.filter((id) => !live.includes(id));
        if (finished.length > 0) await deps.settings.forgetBatches(scope, params.calendarId, finished, record.uses);
        throw new HttpError(409, 'calendar_in_use', `live batches book into calendar ${params.calendarId}; finish, cancel or delete them first`, { batchIds: live });
      }
      const outcome = await deps.settings.delete(scope, params.calendarId, record.uses);
      if (outcome === 'absent') throw notFound(`calendar ${params.calendarId}`);
      if (outcome === 'changed') throw unavailable('a batch named this calendar meanwhile (or another write held it); nothing was deleted, try again');
      return { status: 200, body: calendarView(storedOf(record)) };
    },
  });

  return [put, get, list, remove];
}
