/**
 * Outbound HTTP, sent once. Every HTTP request redial makes (the call placer, the ops CLI) goes through
 * here: no retry, no redirect followed, a timeout. A failure is returned to the caller to classify;
 * only the job layer decides whether to try again.
 */
export interface OutboundRequest {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  /** Abandon the request after this long (default 10 s). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
}

/** Sends one HTTP request exactly once. Network errors and timeouts reject; any status resolves. */
export async function sendOnce(request: OutboundRequest): Promise<OutboundResponse> {
  const timeout = AbortSignal.timeout(request.timeoutMs ?? 10_000);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  const response = await fetch(request.url, {
    method: request.method ?? 'GET',
    ...(request.headers ? { headers: request.headers } : {}),
    ...(request.body !== undefined ? { body: request.body } : {}),
    redirect: 'manual',
    signal,
  });
  const headers: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    headers[key] = value;
  });
  return { status: response.status, headers, text: await response.text() };
}
