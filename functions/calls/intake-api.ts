import { IncompleteReadError, InvalidCursorError } from '../platform/dynamo.ts';
import { HttpError, route, unavailable, withErrors } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import { classifyCallReport } from './classify.ts';
import { retriedIn } from './control/batch-control.ts';
import { completeCall } from './completion.ts';
import { recordOptOutWithoutBatch } from './compliance/opt-out.ts';
import { INTAKE_MAX_BODY_BYTES } from './config.ts';
import type { CallsDeps } from './deps.ts';
import { IntakeNotConfiguredError, SignatureError } from './errors.ts';
import { callResultBody, callResultResponse } from './intake-schemas.ts';
import { callWebhookVerifier } from './signature.ts';
import { BatchSettingError, BatchStatusConflictError } from './control/errors.ts';

/**
 * The calls routes' errors as HTTP answers, in one place: a refused signature is a 401; an intake with
 * no secret, or a page read DynamoDB left incomplete, a 503 (ask again), never a half answer.
 */
export function callsHttpError(error: unknown): HttpError | undefined {
  if (error instanceof SignatureError) return new HttpError(401, 'invalid_signature', error.message);
  if (error instanceof IntakeNotConfiguredError) return unavailable(error.message);
  if (error instanceof IncompleteReadError) return unavailable();
  // Campaign control (control/errors.ts): a status that does not allow the action, a field out of range for this batch or tenant.
  if (error instanceof BatchStatusConflictError) return new HttpError(409, 'conflict', error.message, { action: error.action, status: error.status });
  if (error instanceof BatchSettingError) return new HttpError(400, 'invalid_request', 'invalid body', { issues: [{ path: `body.${error.path}`, message: error.message }] });
  if (error instanceof InvalidCursorError) return new HttpError(400, 'invalid_request', 'invalid query', { issues: [{ path: 'query.cursor', message: error.message }] });
  return undefined;
}

/**
 * `POST /v1/calls/webhook`, the signed call-result intake (docs/calls.md): one of the calls routes
 * (api.ts), in a module of its own so that the intake's Lambda bundle holds this route and what it runs.
 */
export function intakeRoute(calls: () => CallsDeps): ApiRoute {
  // Resolved on the first request, so listing the routes needs no configuration.
  let verify: ReturnType<typeof callWebhookVerifier> | undefined;
  const verifier = () => {
    const secret = calls().config.webhookSecret;
    if (!secret) throw new IntakeNotConfiguredError();
    return (verify ??= callWebhookVerifier(secret));
  };

  const intake = route({
    method: 'POST',
    path: '/v1/calls/webhook',
    auth: 'none',
    summary: 'Call-result intake: the AI call handler reports a call (Standard Webhooks signed)',
    maxBodyBytes: INTAKE_MAX_BODY_BYTES,
    body: callResultBody,
    responses: {
      200: { description: 'applied, or ignored (a duplicate, a result for another call than the one in progress, a deleted batch): nothing to try again', schema: callResultResponse },
      400: { description: 'invalid body' },
      401: { description: 'missing, wrong or stale signature' },
      413: { description: 'body too large' },
      503: { description: 'transient: nothing was written, try again' },
    },
    guard: ({ headers, rawBody }) => {
      verifier()(headers, rawBody, calls().wallClock.now());
    },
    handler: async ({ body }) => {
      const deps = calls();
      const { logger } = deps;
      // The batch id names its tenant: its settings and keys follow from it, with no read on a warm container.
      const batch = await deps.batches.get(body.batchId);
      if (!batch) {
        // A deleted batch's result changes nothing, but an opt-out in it stands (compliance/opt-out.ts).
        if (body.optOut === true) {
          const recorded = await recordOptOutWithoutBatch(deps, { batchId: body.batchId, number: body.contactNumber, callId: body.callId, externalId: body.externalId });
          if (recorded === 'contention' || recorded === 'unexplained') throw unavailable();
        }
        return { status: 200, body: { outcome: 'ignored' } };
      }
      const classified = classifyCallReport(body, batch.minConversationDurationSeconds);
      // Retryable as the batch chose (`retryOn`): what the finaliser's promotion reads too.
      const classification = { code: classified.code, retryable: retriedIn(batch.retryOn, classified.code) };
      const outcome = await completeCall(deps, batch, {
        batchId: body.batchId,
        contactNumber: body.contactNumber,
        callId: body.callId,
        classification,
        source: 'webhook',
        report: { reportedCode: body.code, emptyTranscription: body.emptyTranscription, durationSeconds: body.durationSeconds },
        artefacts: { recordingUrl: body.recordingUrl, transcriptUrl: body.transcriptUrl, summary: body.summary, data: body.data, endedReason: body.endedReason },
        ...(body.externalId !== undefined ? { externalId: body.externalId } : {}),
        ...(body.placedAt !== undefined ? { placedAt: body.placedAt } : {}),
        ...(body.optOut === true ? { optOut: true } : {}),
      });
      switch (outcome.outcome) {
        case 'applied':
          return { status: 200, body: { outcome: 'applied', code: outcome.code, retryable: outcome.retryable } };
        case 'ignored':
          logger.debug('call result ignored', { batchId: body.batchId, contactNumber: body.contactNumber, reason: outcome.reason });
          return { status: 200, body: { outcome: 'ignored' } };
        case 'unavailable':
          throw unavailable();
        default:
          return outcome satisfies never;
      }
    },
  });

  return withErrors(callsHttpError, [intake])[0]!;
}
