import { sendOnce } from '../platform/outbound.ts';

/** A refused or failed API call in the demo. */
export class DemoApiError extends Error {
  override readonly name = 'DemoApiError';
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/**
 * The demo's client of redial's public API: JSON over HTTP, each request sent once, as any client of the
 * API would. As the operator (the local runtime has no IAM: operator routes answer 127.0.0.1, unsigned), or,
 * {@link as} a tenant, with one of its API keys (`Authorization: Bearer`), as a tenant's back end would.
 */
export class DemoApi {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  constructor(baseUrl: string, apiKey?: string) {
    this.baseUrl = baseUrl;
    this.apiKey = apiKey;
  }

  /** The same API, as the tenant whose key this is. */
  as(apiKey: string): DemoApi {
    return new DemoApi(this.baseUrl, apiKey);
  }

  async call<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const response = await sendOnce({
      url: `${this.baseUrl}${path}`,
      method,
      headers: { 'content-type': 'application/json', accept: 'application/json', ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      timeoutMs: 30_000,
    });
    if (response.status >= 300) throw new DemoApiError(`${method} ${path} answered ${response.status}: ${response.text.slice(0, 300)}`, response.status);
    return (response.text ? JSON.parse(response.text) : undefined) as T;
  }

  /** A GET whose answer is text (the export's CSV pages). */
  async text(path: string): Promise<string> {
    const response = await sendOnce({ url: `${this.baseUrl}${path}`, method: 'GET', headers: { ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}) }, timeoutMs: 30_000 });
    if (response.status >= 300) throw new DemoApiError(`GET ${path} answered ${response.status}: ${response.text.slice(0, 300)}`, response.status);
    return response.text;
  }

  get = <T>(path: string) => this.call<T>('GET', path);
  post = <T>(path: string, body?: unknown, headers?: Record<string, string>) => this.call<T>('POST', path, body, headers);
  put = <T>(path: string, body?: unknown) => this.call<T>('PUT', path, body);
}
