import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { deliveryJobId } from '../../functions/webhooks/endpoint.ts';
import type { SimClock } from '../clock.ts';
import type { FaultInjector } from '../faults.ts';
import type { Fault } from '../plan.ts';
import type { Scopes } from '../scope.ts';

/**
 * The tenants' webhook receivers, as the simulation's world: one HTTP server, a path per endpoint
 * (`/e/<name>`). Each request is recorded with its webhook-id, its body, whether its signature verifies
 * with the endpoint's secret, and how many requests to that endpoint were open when it arrived. A
 * request counts as open until its response is sent or its client gives up (the connection closes).
 *
 * By default a receiver answers 200. The plan's endpoint faults take over a run of its requests: flap
 * (500, or the connection dropped), stall (no answer until well after the client's timeout), throttle
 * (429 with Retry-After), gone (410 from then on), slow (simulated time moves on by most of the request
 * timeout while the request is out, and the timers that passes fire meanwhile; then 200).
 */

export interface ReceivedRequest {
  endpoint: string;
  /** Which of the endpoint's URLs it came to: the one it was registered with, or the one a PATCH moved it to. */
  path: 'registered' | 'moved';
  webhookId: string;
  body: string;
  /** `webhook-timestamp`, as sent. */
  timestamp: string;
  /** Each `v1,<signature>` of `webhook-signature`. */
  signatures: string[];
  /** Clock ms. */
  at: number;
  /** Requests to this endpoint open when this one arrived (itself excluded). */
  concurrent: number;
  /** What the receiver answered (0: dropped the connection, or stalled past the client's timeout). */
  status: number;
  /** The live runs of the delivery job when it arrived (the one that sent it). */
  runs: number[];
}

/**
 * An owner's change to an endpoint, as the driver made it: sent at `startedAt` (clock ms; the first try), and
 * answered with success at `answeredAt` after `tries` requests (undefined while unanswered, or if it never
 * succeeded). The commit lies between the two: the clock stands still while a request is out, so with one
 * try they are the same moment, and a delivery already on its way when the commit landed arrives at that
 * moment too, never after it.
 */
export interface Change {
  startedAt: number;
  answeredAt?: number;
  tries?: number;
}

/** A secret rotation: the new secret (when the answer came) and until when the old one signs too (null: expireOldNow). */
export interface Rotation extends Change {
  expireOldNow: boolean;
  secret?: string;
  previousSecretUntil?: number | null;
}

/** An event-types change: the types before it (undefined: every type) and after. */
export interface Subscription extends Change {
  before: string[] | undefined;
  after: string[] | undefined;
}

export interface Receiver {
  name: string;
  endpointId?: string;
  /** The secret it was registered with. */
  secret?: string;
  rotation?: Rotation;
  /** Its URL changed to `/e/<name>/moved`. */
  move?: Change;
  subscription?: Subscription;
  received: number;
  open: number;
  /** Faults on this endpoint; `healed` turns them off (the redeliver phase). */
  faults: Extract<Fault, { kind: 'endpoint.flap' | 'endpoint.stall' | 'endpoint.throttle' | 'endpoint.gone' | 'endpoint.slow' }>[];
  started: Set<number>;
}

export class SimReceivers {
  readonly requests: ReceivedRequest[] = [];
  base = '';
  healed = false;
  private server: Server | undefined;
  private readonly receivers = new Map<string, Receiver>();
  private readonly options: {
    clock: SimClock;
    scopes: Scopes;
    faults: FaultInjector;
    planFaults: readonly Fault[];
    stallMs: number;
    /** A slow send: moves the clock on by `fraction` of the request timeout while the request is out, and lets what that starts run beside it. */
    slowSend: (fraction: number) => Promise<void>;
  };

  constructor(options: SimReceivers['options']) {
    this.options = options;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => void this.serve(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      if (!this.server) return resolve();
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  url(name: string): string {
    return `${this.base}/e/${name}`;
  }

  /** The URL a PATCH moves the endpoint to: another path of the same receiver. */
  movedUrl(name: string): string {
    return `${this.base}/e/${name}/moved`;
  }

  /** The endpoint's id and signing secret, once registered. */
  register(name: string, endpointId: string, secret: string): void {
    const receiver = this.receiver(name);
    receiver.endpointId = endpointId;
    receiver.secret = secret;
  }

  /** Every receiver a request or a registration made. */
  all(): Receiver[] {
    return [...this.receivers.values()];
  }

  /** The receiver of `name` (what the driver changed on it is recorded there). */
  of(name: string): Receiver {
    return this.receiver(name);
  }

  /** Whether `request` carries a signature `secret` makes (Standard Webhooks: over id, timestamp and body). */
  static signedWith(request: ReceivedRequest, secret: string): boolean {
    const seconds = Number(request.timestamp);
    if (!Number.isFinite(seconds)) return false;
    let expected: string;
    try {
      expected = new Webhook(secret).sign(request.webhookId, new Date(seconds * 1000), request.body);
    } catch {
      return false;
    }
    return request.signatures.includes(expected);
  }

  /** The most requests ever open at once on each endpoint. */
  maxOpen(): Map<string, number> {
    const max = new Map<string, number>();
    for (const r of this.requests) max.set(r.endpoint, Math.max(max.get(r.endpoint) ?? 0, r.concurrent + 1));
    return max;
  }

  /** The receiver (`e1`) of a registered endpoint id. */
  nameOf(endpointId: string): string | undefined {
    for (const r of this.receivers.values()) if (r.endpointId === endpointId) return r.name;
    return undefined;
  }

  private receiver(name: string): Receiver {
    let receiver = this.receivers.get(name);
    if (!receiver) {
      const faults = this.options.planFaults.filter((f): f is Receiver['faults'][number] => 'endpoint' in f && f.endpoint === name);
      receiver = { name, received: 0, open: 0, faults, started: new Set() };
      this.receivers.set(name, receiver);
    }
    return receiver;
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const matched = /^\/e\/([A-Za-z0-9_-]+)(\/moved)?$/.exec(req.url ?? '');
    const name = matched?.[1];
    if (!name) {
      res.writeHead(404).end();
      return;
    }
    const receiver = this.receiver(name);
    const concurrent = receiver.open++;
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      receiver.open--;
    };
    res.on('close', close);
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
    const webhookId = headers['webhook-id'] ?? '';
    // Checked against the secrets live for the endpoint afterwards (invariants.ts): a rotation's new secret is
    // known only once the driver has its answer, and a delivery may arrive before that.
    const signatures = (headers['webhook-signature'] ?? '').split(' ').filter((s) => s.length > 0);
    // The runs of the delivery's job, or of a recovery's (its id is the original's and the recovery's).
    const runs = receiver.endpointId ? this.options.scopes.sideEffect(deliveryJobId(webhookId, receiver.endpointId), { andSuffixed: true }) : [];
    const n = ++receiver.received;
    const record: ReceivedRequest = {
      endpoint: name,
      path: matched?.[2] ? 'moved' : 'registered',
      webhookId,
      body,
      timestamp: headers['webhook-timestamp'] ?? '',
      signatures,
      at: this.options.clock.now(),
      concurrent,
      status: 200,
      runs,
    };
    this.requests.push(record);

    const fault = this.healed ? undefined : receiver.faults.find((f) => n >= f.nth && n < f.nth + f.count);
    if (fault && !receiver.started.has(fault.id)) {
      receiver.started.add(fault.id);
      this.options.faults.note(fault, `endpoint ${name} from its request ${n} (${webhookId})`);
    }
    switch (fault?.kind) {
      case 'endpoint.flap':
        if (n % 2 === 0) {
          record.status = 0;
          res.destroy();
        } else {
          record.status = 500;
          res.writeHead(500).end('flapping');
        }
        return;
      case 'endpoint.stall':
        record.status = 0;
        setTimeout(() => {
          if (!res.writableEnded && !res.destroyed) res.writeHead(200).end('late');
        }, this.options.stallMs);
        return;
      case 'endpoint.throttle':
        record.status = 429;
        res.writeHead(429, { 'retry-after': String(fault.retryAfterSeconds ?? 60) }).end('slow down');
        return;
      case 'endpoint.gone':
        record.status = 410;
        res.writeHead(410).end('gone');
        return;
      case 'endpoint.slow':
        await this.options.slowSend(fault.fraction);
        if (!res.writableEnded && !res.destroyed) res.writeHead(200).end('slow but ok');
        return;
      case undefined:
        res.writeHead(200).end('ok');
    }
  }
}
