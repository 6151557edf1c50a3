import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { BatchBooking, CallSignatureCheck } from '../../calendar/booking-deps.ts';
import type { CallToolsPort } from '../../calendar/ports.ts';
import { recipientZones } from '../../calls/compliance/recipient.ts';
import { callLivenessChecks } from '../../calls/liveness.ts';
import { batchIds, batchKey, contactDataKey } from '../../calls/model.ts';
import type { BatchRow, ContactDataRow } from '../../calls/model.ts';
import { SignatureError } from '../../calls/errors.ts';
import { callWebhookVerifier } from '../../calls/signature.ts';
import type { SystemHost } from '../host.ts';

/**
 * The calls context's answers to the agent's calendar tools (calendar/ports.ts `CallToolsPort`): the call's
 * liveness as ConditionChecks (calls/liveness.ts), the batch's `appointments` and the contact's zone by the
 * campaign-control rule (compliance/recipient.ts), and the call handler's signature, checked with the
 * intake's secret (calls/signature.ts). Only the functions serving the tools build it.
 */
export function callToolsPort(host: SystemHost, toolsSecret: string | undefined): CallToolsPort {
  const verify = toolsSecret === undefined ? undefined : callWebhookVerifier(toolsSecret);
  const verifySignature: CallSignatureCheck = (headers, rawBody, nowMs) => {
    if (!verify) return { ok: false, reason: 'not_configured', message: 'the tools’ signing secret is not configured' };
    try {
      verify(headers, rawBody, nowMs);
      return { ok: true };
    } catch (error) {
      if (error instanceof SignatureError) return { ok: false, reason: 'refused', message: `the signature was refused: ${error.message}` };
      throw error;
    }
  };
  return {
    liveness: { checks: (call) => callLivenessChecks(host.tableNames.calls, call) },
    verifySignature,
    batchBooking: async (batchId, contactNumber): Promise<BatchBooking | undefined> => {
      const id = batchIds.parse(batchId);
      if (!id) return undefined;
      const [batch, data] = await Promise.all([
        host.db.send(new GetCommand({ TableName: host.tableNames.calls, Key: batchKey(batchId), ConsistentRead: true })),
        host.db.send(new GetCommand({ TableName: host.tableNames.calls, Key: contactDataKey(batchId, contactNumber) })),
      ]);
      const row = batch.Item as BatchRow | undefined;
      if (!row || row.status === 'Deleted') return undefined;
      const contact = data.Item as ContactDataRow | undefined;
      const window = row.callingWindow;
      let contactZone: string | undefined;
      if (window) {
        const zones = recipientZones(
          { number: contactNumber, ...(contact?.timezone ? { timezone: contact.timezone } : {}), ...(contact?.region ? { region: contact.region } : {}) },
          { timezone: window.timezone, perContact: window.perContact === true },
          host.clock.now(),
        ).zones;
        contactZone = zones[0];
      }
      return { tenantId: id.tenantId, batchHex: id.hex, appointments: row.appointments, contactZone };
    },
  };
}
