import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as z from 'zod';
import type { Clock } from '../../platform/clock.ts';
import type { Rng } from '../../platform/rng.ts';
import { isValidEventId } from '../event-ids.ts';

/**
 * The built-in calendar for `npm start` and the tests (local only): an HTTP server on 127.0.0.1 that
 * answers the requests the Google provider sends (google.ts) with Google's shapes — the token exchange at
 * `/token`, and freeBusy, events insert/get/delete under `/calendar/v3` — keeping events in memory.
 * Point the provider at it with `calendarBaseUrl: simulator.calendarBaseUrl, tokenUrl: simulator.tokenUrl`.
 *
 * It can be told to misbehave, once per instruction ({@link CalendarSimulator.inject}, or `POST /_sim/faults`)
 * or at random from a seeded RNG ({@link SimulatorOptions.random}):
 *
 * | fault | applied? | answer |
 * |---|---|---|
 * | `delay` | yes, when the delay ends (even if the client gave up: a late insert) | the normal one, `ms` late |
 * | `status` | no | that status with a Google error body |
 * | `rateLimit` | no | 403 `rateLimitExceeded` (or 429) |
 * | `hang` | no | none: the client times out |
 * | `drop` | no | the connection is reset |
 * | `applyThenHang` | yes | none: "an insert that times out after being applied" |
 * | `applyThenDrop` | yes | the connection is reset after the change |
 * | `applyThenStatus` | yes | an error status (a 5xx after the change) |
 * | `freeBusyErrors` | — | freeBusy answers 200 with `errors` for the calendar |
 *
 * Every request is logged ({@link CalendarSimulator.requests}) with what the simulator did with it, so a
 * test or an invariant can count what was sent and what was applied.
 */
export const SimulatedOp = { token: 'token', freeBusy: 'freeBusy', insert: 'insert', get: 'get', delete: 'delete' } as const;
export type SimulatedOp = (typeof SimulatedOp)[keyof typeof SimulatedOp];
const simulatedOps = Object.values(SimulatedOp) as [SimulatedOp, ...SimulatedOp[]];

/** One way to misbehave; see the table in this file's comment. */
export const faultSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('delay'), ms: z.number().int().min(0).max(120_000) }),
  z.strictObject({ kind: z.literal('status'), status: z.number().int().min(400).max(599), reason: z.string().optional() }),
  z.strictObject({ kind: z.literal('rateLimit'), status: z.union([z.literal(403), z.literal(429)]).optional(), reason: z.string().optional() }),
  z.strictObject({ kind: z.literal('hang') }),
  z.strictObject({ kind: z.literal('drop') }),
  z.strictObject({ kind: z.literal('applyThenHang') }),
  z.strictObject({ kind: z.literal('applyThenDrop') }),
  z.strictObject({ kind: z.literal('applyThenStatus'), status: z.number().int().min(500).max(599) }),
  z.strictObject({ kind: z.literal('freeBusyErrors'), reason: z.string().optional() }),
]);
export type Fault = z.infer<typeof faultSchema>;

/** `POST /_sim/faults`: the next `count` requests of `op` misbehave with `fault`. */
export const injectBody = z.strictObject({ op: z.enum(simulatedOps), fault: faultSchema, count: z.number().int().min(1).max(1000).default(1) });

/** One request the simulator received, and what it did with it. */
export interface SimulatedRequest {
  at: number;
  op: SimulatedOp | 'unknown';
  method: string;
  path: string;
  calendarId?: string;
  eventId?: string;
  fault?: Fault;
  /** Whether the request changed the calendar (an insert stored, a delete applied). */
  applied: boolean;
  /** The status answered; `none` when no answer was given (hang, drop). */
  status: number | 'none';
}

/** An event as the simulator keeps it. */
export interface SimulatedEvent {
  calendarId: string;
  id: string;
  status: 'confirmed' | 'cancelled';
  start: string;
  end: string;
  timeZone: string | undefined;
  summary: string | undefined;
  description: string | undefined;
  privateProperties: Record<string, string>;
  created: number;
  updated: number;
}

export interface SimulatorOptions {
  /** Token lifetimes and event stamps. */
  clock: Clock;
  /** Misbehave at random: each request (of `ops`, default all) gets a fault with probability `rate`, drawn from those that fit its op. */
  random?: { rng: Rng; rate: number; faults: readonly Fault[]; ops?: readonly SimulatedOp[]; latencyMs?: readonly [min: number, max: number] };
  /** `expires_in` of the access tokens it issues. @default 3599 */
  tokenLifetimeSeconds?: number;
  /** Port on 127.0.0.1. @default any free port */
  port?: number;
  /** Told of each request as it is logged, before it is answered (the fault simulation marks the route that sent it). */
  onRequest?: (request: SimulatedRequest) => void;
}

const CALENDAR_PREFIX = '/calendar/v3';

/** The simulator, running on 127.0.0.1. */
export class CalendarSimulator {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly requests: SimulatedRequest[] = [];
  private readonly options: SimulatorOptions;
  private readonly server: Server;
  private readonly calendars = new Map<string, Map<string, SimulatedEvent>>();
  private readonly faults = new Map<SimulatedOp, Fault[]>();
  private readonly tokens = new Map<string, number>();
  private readonly revoked = new Set<string>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly hanging = new Set<ServerResponse>();
  private readonly inFlight = new Set<Promise<void>>();

  private constructor(options: SimulatorOptions, server: Server, url: string) {
    this.options = options;
    this.server = server;
    this.url = url;
  }

  /** Starts the simulator's HTTP server. */
  static async start(options: SimulatorOptions): Promise<CalendarSimulator> {
    const ref: { simulator?: CalendarSimulator } = {};
    const server = createServer((req, res) => {
      ref.simulator?.track(ref.simulator.serve(req, res), res);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    ref.simulator = new CalendarSimulator(options, server, `http://127.0.0.1:${port}`);
    return ref.simulator;
  }

  /** Where the provider sends calendar requests (its `calendarBaseUrl`). */
  get calendarBaseUrl(): string {
    return `${this.url}${CALENDAR_PREFIX}`;
  }

  /** Where the provider exchanges tokens (its `tokenUrl`). */
  get tokenUrl(): string {
    return `${this.url}/token`;
  }

  /** The next `count` requests of `op` misbehave with `fault`, in the order injected. */
  inject(op: SimulatedOp, fault: Fault, count = 1): void {
    const queue = this.faults.get(op) ?? [];
    for (let n = 0; n < count; n++) queue.push(fault);
    this.faults.set(op, queue);
  }

  /** From now on, the token exchange refuses this refresh token with 400 `invalid_grant`. */
  revoke(refreshToken: string): void {
    this.revoked.add(refreshToken);
  }

  /** Puts an event straight into a calendar (someone else's meeting), as if inserted long ago. */
  seedEvent(calendarId: string, event: { id: string; start: number; end: number; summary?: string }): void {
    const now = this.options.clock.now();
    this.calendar(calendarId).set(event.id, {
      calendarId,
      id: event.id,
      status: 'confirmed',
      start: new Date(event.start).toISOString(),
      end: new Date(event.end).toISOString(),
      timeZone: undefined,
      summary: event.summary,
      description: undefined,
      privateProperties: {},
      created: now,
      updated: now,
    });
  }

  /** A calendar's events, deleted ones included (status `cancelled`), in insertion order. */
  events(calendarId: string): SimulatedEvent[] {
    return [...(this.calendars.get(calendarId)?.values() ?? [])].map((e) => ({ ...e, privateProperties: { ...e.privateProperties } }));
  }

  /** Every calendar's events. */
  allEvents(): SimulatedEvent[] {
    return [...this.calendars.keys()].flatMap((id) => this.events(id));
  }

  /** Resolves when every request received so far has been dealt with (a delayed one applied; a hanging one left hanging). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  /** Stops the server: pending delays are dropped, hanging requests cut. */
  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  // ─── Serving ───────────────────────────────────────────────────────────────────────────────────────

  /** Keeps a request's handling until it is done; one that fails (the client went away mid-body) is cut. */
  private track(serving: Promise<void>, res: ServerResponse): void {
    const work = serving.catch(() => {
      if (res.headersSent) res.destroy();
      else res.writeHead(500).end();
    });
    this.inFlight.add(work);
    void work.then(() => this.inFlight.delete(work));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const body = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', this.url);
    const method = req.method ?? 'GET';
    if (url.pathname.startsWith('/_sim/')) {
      this.control(method, url, body, res);
      return;
    }
    const route = this.route(method, url.pathname);
    const entry: SimulatedRequest = {
      at: this.options.clock.now(),
      op: route?.op ?? 'unknown',
      method,
      path: `${url.pathname}${url.search}`,
      ...(route?.calendarId !== undefined ? { calendarId: route.calendarId } : {}),
      ...(route?.eventId !== undefined ? { eventId: route.eventId } : {}),
      // An insert names its event in the body: logged, so a re-sent insert shows as its id twice.
      ...(route?.op === 'insert' ? insertedId(body) : {}),
      applied: false,
      status: 'none',
    };
    this.requests.push(entry);
    this.options.onRequest?.(entry);
    if (!route) {
      this.answer(res, entry, 404, googleError(404, 'notFound', 'Not Found'));
      return;
    }
    const fault = this.faultFor(route.op);
    if (fault) entry.fault = fault;
    const latency = this.latency();
    if (latency > 0) await this.sleep(latency);
    await this.handle(route, url, body, req.headers.authorization, fault, entry, res);
  }

  private async handle(route: Route, url: URL, body: string, authorization: string | undefined, fault: Fault | undefined, entry: SimulatedRequest, res: ServerResponse): Promise<void> {
    switch (fault?.kind) {
      case 'status':
        this.answer(res, entry, fault.status, googleError(fault.status, fault.reason ?? (fault.status >= 500 ? 'backendError' : 'badRequest'), 'Injected failure'));
        return;
      case 'rateLimit': {
        const status = fault.status ?? 403;
        this.answer(res, entry, status, googleError(status, fault.reason ?? 'rateLimitExceeded', 'Rate Limit Exceeded', 'usageLimits'));
        return;
      }
      case 'hang':
        this.hang(res);
        return;
      case 'drop':
        res.destroy();
        return;
      case 'delay':
        await this.sleep(fault.ms);
        break;
      case 'applyThenHang':
      case 'applyThenDrop':
      case 'applyThenStatus':
      case 'freeBusyErrors':
      case undefined:
        break;
    }
    const outcome = this.apply(route, url, body, authorization, fault);
    entry.applied = outcome.applied;
    switch (fault?.kind) {
      case 'applyThenHang':
        this.hang(res);
        return;
      case 'applyThenDrop':
        res.destroy();
        return;
      case 'applyThenStatus':
        this.answer(res, entry, fault.status, googleError(fault.status, 'backendError', 'Backend Error'));
        return;
      case 'delay':
      case 'freeBusyErrors':
      case undefined:
        this.answer(res, entry, outcome.status, outcome.body);
    }
  }

  /** Does what the request asks, as Google would; returns the answer and whether the calendar changed. */
  private apply(route: Route, url: URL, body: string, authorization: string | undefined, fault: Fault | undefined): { status: number; body: unknown; applied: boolean } {
    if (route.op === 'token') return { ...this.exchange(body), applied: false };
    if (!this.authorized(authorization)) return { status: 401, body: googleError(401, 'authError', 'Invalid Credentials', 'global'), applied: false };
    switch (route.op) {
      case 'freeBusy':
        return { ...this.freeBusy(body, fault), applied: false };
      case 'insert':
        return this.insert(route.calendarId, url, body);
      case 'get': {
        const event = this.calendars.get(route.calendarId)?.get(route.eventId);
        return event ? { status: 200, body: resource(event), applied: false } : { status: 404, body: googleError(404, 'notFound', 'Not Found', 'global'), applied: false };
      }
      case 'delete': {
        const event = this.calendars.get(route.calendarId)?.get(route.eventId);
        if (!event) return { status: 404, body: googleError(404, 'notFound', 'Not Found', 'global'), applied: false };
        if (event.status === 'cancelled') return { status: 410, body: googleError(410, 'deleted', 'Resource has been deleted', 'global'), applied: false };
        event.status = 'cancelled';
        event.updated = this.options.clock.now();
        return { status: 204, body: undefined, applied: true };
      }
    }
  }

  private exchange(body: string): { status: number; body: unknown } {
    const form = new URLSearchParams(body);
    const [clientId, clientSecret, refreshToken, grantType] = ['client_id', 'client_secret', 'refresh_token', 'grant_type'].map((k) => form.get(k));
    if (grantType !== 'refresh_token') return { status: 400, body: { error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' + (grantType ?? '') } };
    if (!clientId || !clientSecret) return { status: 401, body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' } };
    if (!refreshToken || this.revoked.has(refreshToken)) return { status: 400, body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' } };
    const lifetime = this.options.tokenLifetimeSeconds ?? 3599;
    const accessToken = `ya29.sim_${randomBytes(16).toString('hex')}`;
    this.tokens.set(accessToken, this.options.clock.now() + lifetime * 1000);
    return { status: 200, body: { access_token: accessToken, expires_in: lifetime, scope: 'https://www.googleapis.com/auth/calendar.events', token_type: 'Bearer' } };
  }

  private authorized(authorization: string | undefined): boolean {
    const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    const expiresAt = token === undefined ? undefined : this.tokens.get(token);
    return expiresAt !== undefined && this.options.clock.now() < expiresAt;
  }

  private freeBusy(body: string, fault: Fault | undefined): { status: number; body: unknown } {
    const parsed = z.object({ timeMin: z.string(), timeMax: z.string(), items: z.array(z.object({ id: z.string() })).min(1) }).safeParse(parseJson(body));
    if (!parsed.success) return { status: 400, body: googleError(400, 'badRequest', 'Bad Request') };
    const from = Date.parse(parsed.data.timeMin);
    const to = Date.parse(parsed.data.timeMax);
    if (!Number.isFinite(from) || !Number.isFinite(to)) return { status: 400, body: googleError(400, 'badRequest', 'Bad Request') };
    if (to <= from) return { status: 400, body: googleError(400, 'timeRangeEmpty', 'The specified time range is empty.', 'calendar', 'timeMax') };
    const calendars: Record<string, unknown> = {};
    for (const { id } of parsed.data.items) {
      if (fault?.kind === 'freeBusyErrors') {
        calendars[id] = { errors: [{ domain: 'global', reason: fault.reason ?? 'backendError' }], busy: [] };
        continue;
      }
      const busy = [...(this.calendars.get(id)?.values() ?? [])]
        .filter((e) => e.status !== 'cancelled')
        .map((e) => ({ start: Math.max(from, Date.parse(e.start)), end: Math.min(to, Date.parse(e.end)) }))
        .filter((i) => i.start < i.end)
        .sort((a, b) => a.start - b.start);
      calendars[id] = { busy: merge(busy).map((i) => ({ start: new Date(i.start).toISOString(), end: new Date(i.end).toISOString() })) };
    }
    return { status: 200, body: { kind: 'calendar#freeBusy', timeMin: new Date(from).toISOString(), timeMax: new Date(to).toISOString(), calendars } };
  }

  private insert(calendarId: string, url: URL, body: string): { status: number; body: unknown; applied: boolean } {
    const when = z.object({ dateTime: z.string(), timeZone: z.string().optional() });
    const parsed = z
      .object({
        id: z.string(),
        summary: z.string().optional(),
        description: z.string().optional(),
        start: when,
        end: when,
        extendedProperties: z.object({ private: z.record(z.string(), z.string()).optional() }).optional(),
      })
      .safeParse(parseJson(body));
    const sendUpdates = url.searchParams.get('sendUpdates');
    if (!parsed.success || (sendUpdates !== null && !['all', 'externalOnly', 'none'].includes(sendUpdates))) {
      return { status: 400, body: googleError(400, 'badRequest', 'Bad Request'), applied: false };
    }
    const { id, start, end } = parsed.data;
    if (!isValidEventId(id)) return { status: 400, body: googleError(400, 'invalid', 'Invalid resource id value.', 'global'), applied: false };
    if (!Number.isFinite(Date.parse(start.dateTime)) || !(Date.parse(end.dateTime) > Date.parse(start.dateTime))) {
      return { status: 400, body: googleError(400, 'timeRangeEmpty', 'The specified time range is empty.', 'calendar'), applied: false };
    }
    const calendar = this.calendar(calendarId);
    // Google refuses an id that exists, deleted ones included ("The requested identifier already exists").
    if (calendar.has(id)) return { status: 409, body: googleError(409, 'duplicate', 'The requested identifier already exists.', 'global'), applied: false };
    const now = this.options.clock.now();
    const event: SimulatedEvent = {
      calendarId,
      id,
      status: 'confirmed',
      start: new Date(Date.parse(start.dateTime)).toISOString(),
      end: new Date(Date.parse(end.dateTime)).toISOString(),
      timeZone: start.timeZone,
      summary: parsed.data.summary,
      description: parsed.data.description,
      privateProperties: parsed.data.extendedProperties?.private ?? {},
      created: now,
      updated: now,
    };
    calendar.set(id, event);
    return { status: 200, body: resource(event), applied: true };
  }

  /** `POST /_sim/faults` `{op, fault, count?}` → 204; `GET /_sim/events?calendarId=` → `{events}`; `GET /_sim/requests` → `{requests}`. */
  private control(method: string, url: URL, body: string, res: ServerResponse): void {
    const json = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (method === 'POST' && url.pathname === '/_sim/faults') {
      const parsed = injectBody.safeParse(parseJson(body));
      if (!parsed.success) return void json(400, { error: 'expected {op, fault, count?}', issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) });
      this.inject(parsed.data.op, parsed.data.fault, parsed.data.count);
      return void res.writeHead(204).end();
    }
    if (method === 'GET' && url.pathname === '/_sim/events') {
      const calendarId = url.searchParams.get('calendarId');
      return void json(200, { events: calendarId === null ? this.allEvents() : this.events(calendarId) });
    }
    if (method === 'GET' && url.pathname === '/_sim/requests') return void json(200, { requests: this.requests });
    json(404, { error: 'unknown control route' });
  }

  // ─── Plumbing ──────────────────────────────────────────────────────────────────────────────────────

  private route(method: string, path: string): Route | undefined {
    if (method === 'POST' && path === '/token') return { op: 'token' };
    if (!path.startsWith(`${CALENDAR_PREFIX}/`)) return undefined;
    const rest = path.slice(CALENDAR_PREFIX.length);
    if (method === 'POST' && rest === '/freeBusy') return { op: 'freeBusy' };
    const match = /^\/calendars\/([^/]+)\/events(?:\/([^/]+))?$/.exec(rest);
    if (!match) return undefined;
    const calendarId = decodeURIComponent(match[1]!);
    const eventId = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
    if (method === 'POST' && eventId === undefined) return { op: 'insert', calendarId };
    if (method === 'GET' && eventId !== undefined) return { op: 'get', calendarId, eventId };
    if (method === 'DELETE' && eventId !== undefined) return { op: 'delete', calendarId, eventId };
    return undefined;
  }

  private faultFor(op: SimulatedOp): Fault | undefined {
    const queued = this.faults.get(op)?.shift();
    if (queued) return queued;
    const random = this.options.random;
    if (!random || (random.ops && !random.ops.includes(op))) return undefined;
    if (random.rng.float() >= random.rate) return undefined;
    const fitting = random.faults.filter((f) => fits(f, op));
    return fitting.length === 0 ? undefined : fitting[random.rng.int(0, fitting.length - 1)];
  }

  private latency(): number {
    const range = this.options.random?.latencyMs;
    return range ? this.options.random!.rng.int(range[0], range[1]) : 0;
  }

  private calendar(calendarId: string): Map<string, SimulatedEvent> {
    const calendar = this.calendars.get(calendarId) ?? new Map<string, SimulatedEvent>();
    this.calendars.set(calendarId, calendar);
    return calendar;
  }

  private answer(res: ServerResponse, entry: SimulatedRequest, status: number, body: unknown): void {
    entry.status = status;
    if (body === undefined) res.writeHead(status).end();
    else res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
  }

  private hang(res: ServerResponse): void {
    this.hanging.add(res);
    res.on('close', () => this.hanging.delete(res));
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        resolve();
      }, ms);
      this.timers.add(timer);
    });
  }
}

type Route =
  | { op: 'token'; calendarId?: undefined; eventId?: undefined }
  | { op: 'freeBusy'; calendarId?: undefined; eventId?: undefined }
  | { op: 'insert'; calendarId: string; eventId?: undefined }
  | { op: 'get' | 'delete'; calendarId: string; eventId: string };

/** Whether a fault makes sense for an op (freeBusy errors only on freeBusy; "applied" faults only where something applies). */
function fits(fault: Fault, op: SimulatedOp): boolean {
  if (fault.kind === 'freeBusyErrors') return op === 'freeBusy';
  if (fault.kind === 'applyThenHang' || fault.kind === 'applyThenDrop' || fault.kind === 'applyThenStatus') return op === 'insert' || op === 'delete';
  return true;
}

/** An Events resource, as Google answers insert and get. */
function resource(event: SimulatedEvent): unknown {
  const when = (dateTime: string) => ({ dateTime, ...(event.timeZone ? { timeZone: event.timeZone } : {}) });
  return {
    kind: 'calendar#event',
    etag: `"${event.updated}"`,
    id: event.id,
    status: event.status,
    created: new Date(event.created).toISOString(),
    updated: new Date(event.updated).toISOString(),
    ...(event.summary !== undefined ? { summary: event.summary } : {}),
    ...(event.description !== undefined ? { description: event.description } : {}),
    start: when(event.start),
    end: when(event.end),
    iCalUID: `${event.id}@google.com`,
    sequence: 0,
    ...(Object.keys(event.privateProperties).length > 0 ? { extendedProperties: { private: event.privateProperties } } : {}),
  };
}

/** A Google error body (the Calendar API's error guide). */
function googleError(code: number, reason: string, message: string, domain = 'global', location?: string): unknown {
  return { error: { errors: [{ domain, reason, message, ...(location ? { locationType: 'parameter', location } : {}) }], code, message } };
}

function merge(sorted: { start: number; end: number }[]): { start: number; end: number }[] {
  const merged: { start: number; end: number }[] = [];
  for (const interval of sorted) {
    const last = merged.at(-1);
    if (last && interval.start <= last.end) last.end = Math.max(last.end, interval.end);
    else merged.push({ ...interval });
  }
  return merged;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The event id an insert's body names, if it names one. */
function insertedId(body: string): { eventId?: string } {
  const id = (parseJson(body) as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' ? { eventId: id } : {};
}
