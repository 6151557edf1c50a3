import * as z from 'zod';
import { refusedCodes } from '../../platform/dynamo.ts';
import { conflict, notFound, tenantRoute, unavailable } from '../../platform/http.ts';
import type { ApiRoute } from '../../platform/http.ts';
import { requestHashOf } from '../../platform/idempotency.ts';
import { batchView, keyedRetry } from '../api.ts';
import { listPagesFor, newBatchRow } from '../batch-create.ts';
import { RETRYABLE_CODES } from '../codes.ts';
import { SUPPRESSED_CODE } from '../compliance/suppression.ts';
import type { Contact } from '../contacts/contact.ts';
import type { CallsDeps } from '../deps.ts';
import { batchIdForKey } from '../idempotency.ts';
import { BatchStatus, batchIds } from '../model.ts';
import type { BatchRow, ContactDataRow } from '../model.ts';
import { batchHeaders, batchParams, batchResponse, MAX_CONTACTS_PER_BATCH, maxConcurrentCallsSchema, startAtSchema } from '../schemas.ts';
import { CallsStore } from '../store.ts';
import { callingWindowSchema } from '../window.ts';
import { firstJob } from './create.ts';
import { patchBatch, pauseBatch, resumeBatch } from './service.ts';
import type { ControlWrite } from './service.ts';

/**
 * Campaign control's routes (docs/calls.md, "Batch control"): pause, resume, PATCH and rerun of a batch.
 * Tenant routes: the tenant is the API key's, and another tenant's batch id names nothing here (404).
 */

const patchBody = z
  .strictObject({
    maxConcurrentCalls: maxConcurrentCallsSchema.optional().describe('its calls in progress at most, 1 to the tenant’s limit; applies from the next dial'),
    callingWindow: callingWindowSchema.optional().describe('the calling window; its dialer is woken to read it'),
    startAt: startAtSchema.optional().describe('a new start (at most 30 days ahead) for a batch that has not started: Scheduled for a time ahead, Pending for one passed'),
  })
  .refine((body) => Object.keys(body).length > 0, { message: 'nothing to change: give maxConcurrentCalls, callingWindow or startAt' });

/** A normalised code, as stored. */
const codeSchema = z.string().regex(/^[A-Z0-9_]{1,64}$/, 'expected a normalised code such as NO_PICKUP');

const rerunBody = z.strictObject({
  codes: z.array(codeSchema).min(1).max(50).optional().describe(`the final codes whose contacts to call again (default: the retryable ones); ${SUPPRESSED_CODE} never`),
});

/** An unwritten control write as an answer: nothing was written, ask again. */
function notWritten(result: Extract<ControlWrite, { written: false }>, action: string): never {
  throw unavailable(result.reason === 'contention' ? undefined : `the batch changed while it was being ${action}; nothing was written, try again`);
}

/** The contacts of a finished batch whose final code is one of `codes` (never a suppressed one), in upload order, with their data. */
async function contactsToRerun(deps: CallsDeps, parent: BatchRow, codes: ReadonlySet<string>): Promise<Contact[]> {
  const { store } = deps;
  const chosen: string[] = [];
  for (let offset = 0; offset < parent.contactCount; offset += 1000) {
    const page = await store.contactsPage(parent.batchId, offset, 1000);
    for (const c of page) if (c.state?.code !== undefined && c.state.code !== SUPPRESSED_CODE && codes.has(c.state.code)) chosen.push(c.number);
  }
  const data = parent.hasContactData && chosen.length > 0 ? await store.getContactData(parent.batchId, chosen) : new Map<string, ContactDataRow>();
  return chosen.map((number) => {
    const d = data.get(number);
    return {
      number,
      numberValid: d?.numberValid !== false,
      ...(d?.region !== undefined ? { region: d.region as Contact['region'] } : {}),
      ...(d?.externalId !== undefined ? { externalId: d.externalId } : {}),
      ...(d?.variables !== undefined ? { variables: d.variables } : {}),
      ...(d?.timezone !== undefined ? { timezone: d.timezone } : {}),
    } satisfies Contact;
  });
}

export function controlRoutes(calls: () => CallsDeps): ApiRoute[] {
  const pause = tenantRoute({
    method: 'POST',
    path: '/v1/batches/{id}/pause',
    summary: 'Pause a batch: no dial commits after the pause does; calls in flight finish and their results apply. Idempotent',
    params: batchParams,
    responses: {
      200: { description: 'the batch, Paused (`pausedFrom`: where resume returns it)', schema: batchResponse },
      404: { description: 'no such batch' },
      409: { description: 'the batch is Finalised, Cancelled or Deleted; nothing written' },
      503: { description: 'the batch changed while it was being paused; nothing written, try again' },
    },
    handler: async ({ params, scope }) => {
      const deps = calls();
      const batch = await deps.store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      const result = await pauseBatch(deps, batch, deps.clock.now());
      if (!result.written) notWritten(result, 'paused');
      return { status: 200, body: batchView(result.batch) };
    },
  });

  const resume = tenantRoute({
    method: 'POST',
    path: '/v1/batches/{id}/resume',
    summary: 'Resume a paused batch: back to the status it had, its dialer woken. Idempotent',
    params: batchParams,
    responses: {
      200: { description: 'the batch, as it resumed (or as it is, if it was not paused)', schema: batchResponse },
      404: { description: 'no such batch' },
      409: { description: 'the batch is Finalised (a paused batch whose contacts all ended), Cancelled or Deleted; nothing written' },
      503: { description: 'the batch changed while it was being resumed; nothing written, try again' },
    },
    handler: async ({ params, scope }) => {
      const deps = calls();
      const batch = await deps.store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      const result = await resumeBatch(deps, batch, deps.clock.now());
      if (!result.written) notWritten(result, 'resumed');
      return { status: 200, body: batchView(result.batch) };
    },
  });

  const patch = tenantRoute({
    method: 'PATCH',
    path: '/v1/batches/{id}',
    summary: 'Change a batch’s maxConcurrentCalls, callingWindow or startAt while it is not finished; new limits apply to the next dial',
    params: batchParams,
    body: patchBody,
    responses: {
      200: { description: 'the batch, changed', schema: batchResponse },
      400: { description: 'an invalid body, or a field out of range for this batch or tenant (its path named); nothing written' },
      404: { description: 'no such batch' },
      409: { description: 'the batch is Finalised, Cancelled or Deleted, or (startAt) it has started; nothing written' },
      503: { description: 'the batch changed while it was being changed; nothing written, try again' },
    },
    handler: async ({ params, body, scope }) => {
      const deps = calls();
      const batch = await deps.store.getBatchIn(scope, params.id);
      if (!batch) throw notFound(`batch ${params.id}`);
      const tenant = await deps.store.getTenantRow(batch.tenantId);
      if (!tenant) throw notFound(`tenant ${batch.tenantId}`);
      const result = await patchBatch(
        deps,
        batch,
        {
          ...(body.maxConcurrentCalls !== undefined ? { maxConcurrentCalls: body.maxConcurrentCalls } : {}),
          ...(body.callingWindow !== undefined ? { callingWindow: body.callingWindow } : {}),
          ...(body.startAt !== undefined ? { startAt: Date.parse(body.startAt) } : {}),
        },
        tenant.concurrencyLimit,
        deps.clock.now(),
      );
      if (!result.written) notWritten(result, 'changed');
      return { status: 200, body: batchView(result.batch) };
    },
  });

  const rerun = tenantRoute({
    method: 'POST',
    path: '/v1/batches/{id}/rerun',
    summary: 'A new batch of a finished batch’s contacts whose final code is in `codes` (default: the retryable codes), with the same settings but startAt; never suppressed contacts',
    params: batchParams,
    body: rerunBody,
    headers: batchHeaders,
    responses: {
      201: { description: 'created, Pending, linked to its parent (`parentBatchId`)', schema: batchResponse.pick({ batchId: true }) },
      200: { description: 'a retry with the same Idempotency-Key and body: the batch it created; nothing written', schema: batchResponse.pick({ batchId: true }) },
      400: { description: 'an invalid body; nothing written' },
      404: { description: 'no such batch' },
      409: { description: `the batch is not finished (Finalised or Cancelled), no contact has one of the codes, or more than ${MAX_CONTACTS_PER_BATCH} have; nothing written` },
      422: { description: 'the Idempotency-Key was used before with a different body; nothing written' },
    },
    handler: async ({ params, body, headers, scope }) => {
      const deps = calls();
      const { store, clock, logger } = deps;
      const parent = await store.getBatchIn(scope, params.id);
      if (!parent) throw notFound(`batch ${params.id}`);
      const key = headers['idempotency-key'];
      const hash = key === undefined ? undefined : requestHashOf({ rerunOf: parent.batchId, codes: body.codes ?? null });
      const batchId = key === undefined ? batchIds.make(scope.tenantId, deps.secureRandom(16).toString('hex')) : batchIdForKey(scope.tenantId, key);
      if (key !== undefined && hash !== undefined) {
        const existing = await store.getBatch(batchId);
        if (existing) return keyedRetry(existing, scope.tenantId, hash);
      }
      if (parent.status !== BatchStatus.Finalised && parent.status !== BatchStatus.Cancelled) throw conflict(`a rerun needs a finished batch (Finalised or Cancelled); this one is ${parent.status}`);
      const codes = new Set(body.codes ?? [...RETRYABLE_CODES]);
      const contacts = await contactsToRerun(deps, parent, codes);
      if (contacts.length === 0) throw conflict(`no contact of batch ${parent.batchId} ended with ${[...codes].join(', ')}`);
      if (contacts.length > MAX_CONTACTS_PER_BATCH) throw conflict(`${contacts.length} contacts would be re-run; a rerun takes at most ${MAX_CONTACTS_PER_BATCH} (narrow the codes)`);
      const now = clock.now();
      const data = CallsStore.contactDataItems(batchId, contacts, now);
      if (data.length > 0) {
        const written = await store.putItems(data as unknown as Record<string, unknown>[]);
        if (written.unprocessed > 0) throw unavailable(`DynamoDB left ${written.unprocessed} of the contacts' data items unwritten; no batch was created, try again (with an Idempotency-Key, the same batch)`);
      }
      const numbers = contacts.map((c) => c.number);
      const pages = listPagesFor(batchId, numbers, now);
      const row = newBatchRow({
        batchId,
        tenantId: parent.tenantId,
        status: BatchStatus.Pending,
        // The parent's settings, but its start: a rerun starts now (PATCH can schedule it).
        settings: {
          maxAttempts: parent.maxAttempts,
          callingWindow: parent.callingWindow,
          retry: parent.retry,
          minConversationDurationSeconds: parent.minConversationDurationSeconds,
          ...(parent.defaultCountry !== undefined ? { defaultCountry: parent.defaultCountry as Contact['region'] } : {}),
          strictNumbers: parent.strictNumbers,
          maxConcurrentCalls: parent.maxConcurrentCalls,
          retryOn: parent.retryOn,
        },
        contacts: {
          count: numbers.length,
          variableNames: parent.variableNames ?? [],
          hasContactData: data.length > 0,
          invalidNumbers: contacts.filter((c) => !c.numberValid).length,
          duplicatesDropped: 0,
        },
        listPages: pages.length,
        now,
        idempotency: key === undefined || hash === undefined ? undefined : { key, requestHash: hash },
      });
      const batch: BatchRow = { ...row, parentBatchId: parent.batchId };
      const dial = firstJob(deps, batch);
      const result = await store.transact([...store.createBatchItems(batch, pages), dial.item]);
      if (!result.committed) {
        if (hash !== undefined && result.refused['batch']?.code === 'ConditionalCheckFailed') return keyedRetry(result.refused['batch'].item as BatchRow | undefined, scope.tenantId, hash);
        if (result.contention) throw unavailable();
        logger.error('rerun batch creation cancelled', { refused: refusedCodes(result) });
        throw unavailable();
      }
      await deps.jobs.afterCommit([dial]);
      return { status: 201, body: { batchId } };
    },
  });

  return [pause, resume, patch, rerun];
}
