import { sendOnce } from '../platform/outbound.ts';

/** What the dialer asks the call placer for (docs/calls.md, "The dialer"): `POST CALL_PLACER_URL` with this JSON. */
export interface PlaceCallRequest {
  batchId: string;
  contactNumber: string;
  round: number;
  /** This call's id: the result must carry it back (a contact is called again in later rounds). */
  callId: string;
  /** Where the placer posts the call's result (the intake). */
  callbackUrl: string;
  /** When the call's dial committed (ISO): echoed back in the result, it becomes the attempt's `placedAt`. */
  placedAt: string;
  /** The customer's key for the contact: echoed back in the result, so `call.completed` carries it without a read. */
  externalId?: string;
  /** The contact's variables, for the agent's prompt. */
  variables?: Record<string, string | number | boolean>;
}

/** The placer's answer: accepted (2xx), or why not. */
export type PlaceCallResult = { accepted: true } | { accepted: false; reason: string };

/**
 * Asks the call placer for one call, once (sendOnce: no retry, no redirect, a timeout). Anything but a
 * 2xx is a refusal; the dialer completes the contact with INTERNAL_ERROR, and the batch's rounds decide
 * whether it is dialled again.
 */
export async function placeCall(url: string, request: PlaceCallRequest, options: { timeoutMs: number; signal?: AbortSignal }): Promise<PlaceCallResult> {
  try {
    const response = await sendOnce({
      url,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
      timeoutMs: options.timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    if (response.status >= 200 && response.status < 300) return { accepted: true };
    return { accepted: false, reason: `placer answered ${response.status}` };
  } catch (error) {
    return { accepted: false, reason: `placer unreachable: ${error instanceof Error ? error.message : String(error)}` };
  }
}
