import { Webhook } from 'standardwebhooks';
import * as z from 'zod';
import { route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';

/** How one demo receiver answers: by the number of requests it has seen so far. */
export interface ReceiverBehaviour {
  name: string;
  description: string;
  answer(requestNumber: number): { status: number; headers?: Record<string, string> };
}

/** The four customer endpoints of the demo (README, "What the demo shows"): healthy, fails twice then recovers, throttles, gone. */
export const demoReceivers: readonly ReceiverBehaviour[] = [
  { name: 'healthy', description: 'answers 200', answer: () => ({ status: 200 }) },
  { name: 'flaky', description: 'answers 500 twice, then 200', answer: (n) => ({ status: n <= 2 ? 500 : 200 }) },
  {
    name: 'throttled',
    description: 'answers 429 with Retry-After: 120 twice, then 200',
    answer: (n) => (n <= 2 ? { status: 429, headers: { 'retry-after': '120' } } : { status: 200 }),
  },
  { name: 'gone', description: 'answers 410 Gone', answer: () => ({ status: 410 }) },
];

/** What a receiver has seen. */
export interface ReceiverStats {
  name: string;
  requests: number;
  byStatus: Record<string, number>;
  /** Requests whose Standard Webhooks signature verified against the endpoint's secret. */
  verified: number;
  /** Distinct webhook-id values among the 2xx answers: events delivered. */
  delivered: number;
}

/**
 * The demo's customer endpoints, served by the local runtime itself under `/_demo/receivers/{name}`.
 * Each checks the signature with the endpoint's secret (set once the demo has registered it) and keeps
 * counts for the demo's progress lines and summary.
 */
export class DemoReceivers {
  private readonly secrets = new Map<string, Webhook>();
  private readonly stats = new Map<string, ReceiverStats & { ids: Set<string> }>();

  constructor() {
    for (const r of demoReceivers) this.stats.set(r.name, { name: r.name, requests: 0, byStatus: {}, verified: 0, delivered: 0, ids: new Set() });
  }

  /** The path of a receiver, to register as an endpoint URL under the runtime's base URL. */
  static path(name: string): string {
    return `/_demo/receivers/${name}`;
  }

  setSecret(name: string, secret: string): void {
    this.secrets.set(name, new Webhook(secret));
  }

  snapshot(): ReceiverStats[] {
    return [...this.stats.values()].map(({ ids: _ids, ...s }) => ({ ...s, byStatus: { ...s.byStatus } }));
  }

  routes(): ApiRoute[] {
    const receive = route({
      method: 'POST',
      path: '/_demo/receivers/{name}',
      auth: 'none',
      summary: 'Demo customer endpoint',
      params: z.object({ name: z.string() }),
      handler: async ({ params, headers, rawBody }) => {
        const behaviour = demoReceivers.find((r) => r.name === params.name);
        const stats = this.stats.get(params.name);
        if (!behaviour || !stats) return { status: 404, body: { error: 'no such receiver' } };
        stats.requests++;
        const webhook = this.secrets.get(params.name);
        // Signature only: the library's ±5 min tolerance is against the wall clock, and under TIME_SCALE the
        // runtime's clock runs ahead of it (the timestamp is still covered by the signature).
        const verified = webhook ? verifySignatureOnly(webhook, headers, rawBody) : false;
        if (verified) stats.verified++;
        const answer = behaviour.answer(stats.requests);
        stats.byStatus[answer.status] = (stats.byStatus[answer.status] ?? 0) + 1;
        if (answer.status < 300 && headers['webhook-id']) {
          stats.ids.add(headers['webhook-id']);
          stats.delivered = stats.ids.size;
        }
        return { status: answer.status, ...(answer.headers ? { headers: answer.headers } : {}), body: { received: true } };
      },
    });
    return [receive ];
  }
}

/** Checks a Standard Webhooks signature without the library's wall-clock tolerance. */
function verifySignatureOnly(webhook: Webhook, headers: Record<string, string>, rawBody: string): boolean {
  const id = headers['webhook-id'];
  const timestamp = Number(headers['webhook-timestamp']);
  const signatures = headers['webhook-signature'];
  if (!id || !Number.isFinite(timestamp) || !signatures) return false;
  const expected = webhook.sign(id, new Date(timestamp * 1000), rawBody);
  return signatures.split(' ').includes(expected);
}
