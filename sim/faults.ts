import {
  InternalServerError,
  ProvisionedThroughputExceededException,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import type { AwsService, InstrumentableClient, RequestInterceptor } from '../functions/platform/aws.ts';
import type { SimClock } from './clock.ts';
import type { DispatchTransport } from '../functions/jobs/dispatch.ts';
import type { MailTransport, RawMail } from '../functions/mail/transport.ts';
import { describeFault } from './plan.ts';
import type { Fault, FaultKind, RequestClass, RunTarget } from './plan.ts';
import { never } from './scope.ts';
import type { RunScope, Scopes } from './scope.ts';

/**
 * The fault injector: a plan's faults, applied at the boundaries redial already has. It is the
 * {@link RequestInterceptor} createAwsClients installs on every AWS client (and only when one is passed),
 * a decorator of the job layer's dispatch transport (SQS and Scheduler), and a decorator of the mail
 * transport. The world around redial (the call placer, the webhook receivers, the SMTP server) asks it
 * for the faults that are theirs.
 *
 * Each fault fires once, at the `nth` event that matches it (see plan.ts); everything it does is logged
 * in {@link FaultInjector.fired}. A crash kills the run's whole invocation (scope.ts): the request that
 * found it is not sent, and the invocation's runs hang at their next request.
 */

/** One fault that fired. */
export interface Injection {
  fault: Fault;
  /** Clock ms. */
  at: number;
  /** What it hit: the request, the run, the call, the message. */
  detail: string;
}

const WRITE_OPS = new Set(['PutItem', 'UpdateItem', 'DeleteItem', 'TransactWriteItems', 'BatchWriteItem']);

const operationOf = (commandName: string | undefined) => (commandName ?? 'Unknown').replace(/Command$/, '');

/** Whether a run is one a fault aims at. */
export const matchesTarget = (target: RunTarget, scope: RunScope): boolean =>
  (target.where === undefined || target.where === scope.where) && (target.name === undefined || target.name === scope.name);

/** What a boundary (a request about to leave) is. */
interface Boundary {
  service: AwsService | 'SMTP';
  operation: string;
  write: boolean;
  /** A write to the run's own job row: its claim (the run's first request) or its outcome. */
  ownJob?: boolean;
  /** A write that discards a job (the run's own, or one the rescuer gives up on). */
  discards?: boolean;
  /** For a transaction: how many items (a conflict names one of them). */
  items?: number;
}

const metadata = (status: number) => ({ httpStatusCode: status, requestId: 'sim', attempts: 1, totalRetryDelay: 0 });

/** The error DynamoDB answers with for a fault that refuses a request before it is applied. */
function refusal(kind: 'dynamo.conflict' | 'dynamo.throughput' | 'dynamo.throttling' | 'dynamo.internal', boundary: Boundary, pickItem: (n: number) => number): Error {
  switch (kind) {
    case 'dynamo.conflict':
      if (boundary.operation === 'TransactWriteItems') {
        const n = boundary.items ?? 1;
        const conflicted = pickItem(n);
        return new TransactionCanceledException({
          message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]',
          $metadata: metadata(400),
          CancellationReasons: Array.from({ length: n }, (_, i) => (i === conflicted ? { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' } : { Code: 'None' })),
        });
      }
      return new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: metadata(400) });
    case 'dynamo.throughput':
      return new ProvisionedThroughputExceededException({ message: 'The level of configured provisioned throughput for the table was exceeded.', $metadata: metadata(400) });
    case 'dynamo.throttling':
      return new ThrottlingException({ message: 'Throughput exceeds the current capacity of your table or index.', $metadata: metadata(400) });
    case 'dynamo.internal':
      return new InternalServerError({ message: 'Internal server error', $metadata: metadata(500) });
  }
}

/** What a caller sees when a response is lost on the way back: the connection dropped. */
function lostResponse(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET', $metadata: {} });
}

/** What SQS or Scheduler answers for a send the plan fails. */
function serviceUnavailable(service: string): Error {
  return Object.assign(new Error(`${service}: Service Unavailable`), { name: 'ServiceUnavailable', $metadata: metadata(503), $fault: 'server' });
}

/** Whether a request is of the class a fault looks at. */
function classMatches(ops: RequestClass, boundary: Boundary, requestNo: number): boolean {
  switch (ops) {
    case 'any':
      return true;
    case 'write':
      return boundary.write;
    case 'read':
      return !boundary.write;
    case 'transaction':
      return boundary.operation === 'TransactWriteItems';
    case 'claim':
      return boundary.ownJob === true && requestNo === 1;
    case 'outcome':
      return boundary.ownJob === true && requestNo > 1;
    case 'discard':
      return boundary.discards === true;
  }
}

/** The job a request writes, when it is an UpdateItem on the jobs table (`…-jobs`). */
function jobWritten(operation: string, input: Record<string, unknown>): string | undefined {
  if (operation !== 'UpdateItem' || typeof input['TableName'] !== 'string' || !input['TableName'].endsWith('-jobs')) return undefined;
  return (input['Key'] as { id?: { S?: string } } | undefined)?.id?.S;
}

export class FaultInjector implements RequestInterceptor {
  readonly fired: Injection[] = [];
  /** AWS requests sent through the injector (for `--verbose` and the summary). */
  readonly sent = { requests: 0 };
  private readonly faults: Fault[];
  private readonly seen = new Map<number, number>();
  private readonly scopes: Scopes;
  private readonly clock: SimClock;
  private readonly draw: () => number;
  private readonly appliedListeners: ((service: AwsService, operation: string, input: Record<string, unknown>) => void)[] = [];
  /** The runs sending each Message-ID right now (the SMTP server attributes what it receives to them). */
  private readonly mailSenders = new Map<string, number[]>();
  /** Messages held back by sqs.reorder, per queue, until the next send to that queue overtakes them. */
  private readonly held = new Map<string, { body: string; delaySeconds: number; cancel: () => void }[]>();

  constructor(options: { faults: readonly Fault[]; scopes: Scopes; clock: SimClock; draw: () => number }) {
    this.faults = [...options.faults];
    this.scopes = options.scopes;
    this.clock = options.clock;
    this.draw = options.draw;
  }

  /** Faults the plan holds that never found their event (shown beside a result). */
  unfired(): Fault[] {
    const ids = new Set(this.fired.map((f) => f.fault.id));
    return this.faults.filter((f) => !ids.has(f.id));
  }

  /** Calls `listener` with every AWS request that was applied (whatever its caller then saw). */
  onApplied(listener: (service: AwsService, operation: string, input: Record<string, unknown>) => void): void {
    this.appliedListeners.push(listener);
  }

  /** Logs a fault the world applies over a run of events (an endpoint's faults), when it starts. */
  note(fault: Fault, detail: string): void {
    this.fired.push({ fault, at: this.clock.now(), detail });
  }

  /**
   * Counts an event for every fault of `kinds` that `matches` accepts, and returns the first fault whose
   * count reaches its `nth` (it fires, and is logged with `detail`).
   */
  take<K extends FaultKind>(kinds: readonly K[], matches: (fault: Extract<Fault, { kind: K }>) => boolean, detail: () => string): Extract<Fault, { kind: K }> | undefined {
    let firing: Extract<Fault, { kind: K }> | undefined;
    for (const fault of this.faults) {
      if (!(kinds as readonly string[]).includes(fault.kind)) continue;
      const typed = fault as Extract<Fault, { kind: K }>;
      if (!matches(typed)) continue;
      const count = (this.seen.get(fault.id) ?? 0) + 1;
      this.seen.set(fault.id, count);
      if (count === fault.nth && !firing) {
        firing = typed;
        this.fired.push({ fault, at: this.clock.now(), detail: detail() });
      }
    }
    return firing;
  }

  // ─── The boundary every request crosses ──────────────────────────────────────────────────────────

  /**
   * A request is about to leave the run in scope: decides whether the run dies here (a crash fault),
   * whether the clock jumps, and which request fault (if any) applies to it. Outside a run (the
   * simulator's own reads), nothing applies.
   */
  private cross(scope: RunScope | undefined, boundary: Boundary): { dead: boolean; fault?: Extract<Fault, { kind: 'dynamo.conflict' | 'dynamo.throughput' | 'dynamo.throttling' | 'dynamo.internal' | 'dynamo.lostResponse' | 'dynamo.unprocessed' }> } {
    if (!scope) return { dead: false };
    if (scope.invocation.crashed) return { dead: true };
    scope.requests++;
    const betweenWrites = boundary.write && scope.lastWasWrite;
    scope.lastWasWrite = boundary.write;
    const what = () => `${boundary.service} ${boundary.operation} (request ${scope.requests}) of ${scope.where} ${scope.name}${scope.jobId ? ` ${scope.jobId}` : ''}`;

    const crash = this.take(
      ['crash.afterClaim', 'crash.afterSideEffect', 'crash.betweenWrites', 'crash.atRequest'],
      (f) => {
        if (!matchesTarget(f.target, scope)) return false;
        switch (f.kind) {
          case 'crash.afterClaim':
            return scope.requests === 2;
          case 'crash.afterSideEffect':
            return scope.sideEffectAt >= 0 && scope.requests === scope.sideEffectAt + 1;
          case 'crash.betweenWrites':
            return betweenWrites;
          case 'crash.atRequest':
            return scope.requests === f.request;
          default:
            return false;
        }
      },
      () => `died before ${what()}`,
    );
    if (crash) {
      scope.invocation.crash(describeFault(crash));
      return { dead: true };
    }

    const jump = this.take(['clock.jump'], (f) => matchesTarget(f.target, scope), () => `at ${what()}`);
    if (jump) this.clock.set(this.clock.now() + jump.jumpMs);

    if (boundary.service !== 'DynamoDB') return { dead: false };
    const fault = this.take(
      ['dynamo.conflict', 'dynamo.throughput', 'dynamo.throttling', 'dynamo.internal', 'dynamo.lostResponse', 'dynamo.unprocessed'],
      (f) => matchesTarget(f.target, scope) && (f.kind === 'dynamo.unprocessed' ? boundary.operation === 'BatchWriteItem' : classMatches(f.ops, boundary, scope.requests)),
      what,
    );
    return fault ? { dead: false, fault } : { dead: false };
  }

  /** After a request: a run whose invocation died meanwhile never sees the response. */
  private survived(scope: RunScope | undefined): boolean {
    return !scope?.invocation.crashed;
  }

  // ─── AWS clients (installed by createAwsClients) ─────────────────────────────────────────────────

  instrument(client: InstrumentableClient, service: AwsService): void {
    client.middlewareStack.add(
      (next, ctx) => async (args) => {
        const operation = operationOf(ctx.commandName);
        const input = args.input as Record<string, unknown>;
        const items = operation === 'TransactWriteItems' ? ((input['TransactItems'] as unknown[] | undefined)?.length ?? 1) : undefined;
        const scope = this.scopes.current();
        const ownJob = scope?.jobId !== undefined && jobWritten(operation, input) === scope.jobId;
        const discards = jobWritten(operation, input) !== undefined && Object.values((input['ExpressionAttributeValues'] ?? {}) as Record<string, { S?: string }>).some((v) => v.S === 'discarded');
        const crossing = this.cross(scope, { service, operation, write: WRITE_OPS.has(operation), ownJob, discards, ...(items !== undefined ? { items } : {}) });
        if (crossing.dead) return never();
        const fault = crossing.fault;
        if (fault && fault.kind !== 'dynamo.lostResponse' && fault.kind !== 'dynamo.unprocessed') throw refusal(fault.kind, { service, operation, write: true, ...(items !== undefined ? { items } : {}) }, (n) => Math.floor(this.draw() * n));
        this.sent.requests++;
        if (fault?.kind === 'dynamo.unprocessed') return this.partly(next, args, fault.applied, scope);
        const output = await next(args);
        // Applied: the world learns of it even if the run died or the response is lost.
        for (const listener of this.appliedListeners) listener(service, operation, input);
        if (!this.survived(scope)) return never();
        if (fault?.kind === 'dynamo.lostResponse') throw lostResponse();
        return output;
      },
      // The build step: after the document client has marshalled the input (as the recorder sees it).
      { step: 'build', name: 'simFaults' },
    );
  }

  /**
   * A BatchWriteItem DynamoDB applies only in part (`dynamo.unprocessed`): the first `applied` requests of
   * each table are sent, the rest come back as UnprocessedItems (as DynamoDB answers when a partition is
   * over its capacity), exactly as they were asked. At the build step the request is already serialised,
   * so its JSON body is what is cut (before it is signed).
   */
  private async partly<A extends { input: unknown; request?: unknown }, Out>(next: (args: A) => Promise<Out>, args: A, applied: number, scope: RunScope | undefined): Promise<Out> {
    const input = args.input as { RequestItems?: Record<string, unknown[]> };
    const request = args.request as { body?: unknown; headers: Record<string, string> };
    const body = JSON.parse(typeof request.body === 'string' ? request.body : new TextDecoder().decode(request.body as Uint8Array)) as { RequestItems: Record<string, unknown[]> };
    const cut = <T>(items: Record<string, T[]>, from: number, to?: number) =>
      Object.fromEntries(Object.entries(items).map(([table, requests]) => [table, requests.slice(from, to)] as const).filter(([, requests]) => requests.length > 0));
    const left = cut(input.RequestItems ?? {}, applied);
    const answer = (output: Record<string, unknown>) => ({ output: { ...output, UnprocessedItems: left }, response: { statusCode: 200 } }) as Out;
    const sent = cut(body.RequestItems, 0, applied);
    if (Object.keys(sent).length === 0) return answer({ $metadata: metadata(200) });
    request.body = JSON.stringify({ ...body, RequestItems: sent });
    request.headers['content-length'] = String(Buffer.byteLength(request.body as string));
    const result = (await next(args)) as { output: Record<string, unknown> };
    for (const listener of this.appliedListeners) listener('DynamoDB', 'BatchWriteItem', { ...input, RequestItems: cut(input.RequestItems ?? {}, 0, applied) });
    if (!this.survived(scope)) return never();
    return answer(result.output);
  }

  // ─── SQS and Scheduler (the dispatch transport) ──────────────────────────────────────────────────

  /** The transport with the plan's SQS and Scheduler faults, and the crash boundary, in front of it. */
  transport(inner: DispatchTransport & { deliverNow(queue: string, body: string): void }): DispatchTransport {
    return {
      sendMessage: async (queue, body, delaySeconds) => {
        const scope = this.scopes.current();
        if (this.cross(scope, { service: 'SQS', operation: 'SendMessage', write: true }).dead) return never();
        const detail = () => `SendMessage to ${queue} ${body}${scope ? ` from ${scope.where} ${scope.name}` : ''}`;
        const fault = this.take(['sqs.duplicate', 'sqs.late', 'sqs.reorder', 'sqs.sendFails'], (f) => f.queue === undefined || f.queue === queue, detail);
        switch (fault?.kind) {
          case 'sqs.sendFails':
            throw serviceUnavailable('SQS');
          case 'sqs.late':
            // Accepted, but the queue hands it over late.
            this.clock.setTimer(this.clock.now() + delaySeconds * 1000 + fault.delayMs, () => inner.deliverNow(queue, body), 'fault');
            break;
          case 'sqs.duplicate':
            await inner.sendMessage(queue, body, delaySeconds);
            this.clock.setTimer(this.clock.now() + delaySeconds * 1000 + fault.delayMs, () => inner.deliverNow(queue, body), 'fault');
            break;
          case 'sqs.reorder': {
            // Held until the next message to this queue has gone first (or a minute has passed).
            const list = this.held.get(queue) ?? [];
            const entry: { body: string; delaySeconds: number; cancel: () => void } = { body, delaySeconds, cancel: () => undefined };
            entry.cancel = this.clock.setTimer(this.clock.now() + 60_000, () => {
              this.held.set(queue, (this.held.get(queue) ?? []).filter((e) => e !== entry));
              void inner.sendMessage(queue, body, delaySeconds);
            }, 'fault');
            list.push(entry);
            this.held.set(queue, list);
            return;
          }
          case undefined:
            await inner.sendMessage(queue, body, delaySeconds);
        }
        this.release(queue, inner);
        if (!this.survived(scope)) return never();
      },
      createSchedule: async (name, at, queue, body) => {
        const scope = this.scopes.current();
        if (this.cross(scope, { service: 'Scheduler', operation: 'CreateSchedule', write: true }).dead) return never();
        const fault = this.take(['scheduler.createFails', 'scheduler.late'], () => true, () => `CreateSchedule ${name} for ${new Date(at).toISOString()} ${body}`);
        if (fault?.kind === 'scheduler.createFails') throw serviceUnavailable('Scheduler');
        await inner.createSchedule(name, fault?.kind === 'scheduler.late' ? at + fault.delayMs : at, queue, body);
        if (!this.survived(scope)) return never();
      },
      // A schedule the job no longer needs: the crash boundary applies; no fault of its own (one left behind
      // only fires a wake-up the claim refuses).
      deleteSchedule: async (name) => {
        const scope = this.scopes.current();
        if (this.cross(scope, { service: 'Scheduler', operation: 'DeleteSchedule', write: true }).dead) return never();
        await inner.deleteSchedule(name);
        if (!this.survived(scope)) return never();
      },
    };
  }

  /** Sends the messages sqs.reorder held back for `queue`, now that a later one went first. */
  private release(queue: string, inner: DispatchTransport): void {
    const list = this.held.get(queue);
    if (!list?.length) return;
    this.held.delete(queue);
    for (const entry of list) {
      entry.cancel();
      void inner.sendMessage(queue, entry.body, entry.delaySeconds);
    }
  }

  /** The runs sending `messageId` now. */
  mailSendersOf(messageId: string): number[] {
    return [...(this.mailSenders.get(messageId) ?? [])];
  }

  // ─── Mail ────────────────────────────────────────────────────────────────────────────────────────

  /** The mail transport with the crash boundary around each send; a send is the run's side effect. */
  mail(inner: MailTransport): MailTransport {
    return {
      name: inner.name,
      send: async (mail: RawMail, signal: AbortSignal) => {
        const scope = this.scopes.current();
        if (this.cross(scope, { service: 'SMTP', operation: 'SendMail', write: true }).dead) return never();
        const messageId = /^Message-ID:\s*(\S+)/im.exec(mail.raw.toString('utf8'))?.[1] ?? '';
        if (scope) this.mailSenders.set(messageId, [...(this.mailSenders.get(messageId) ?? []), scope.id]);
        try {
          const sent = await inner.send(mail, signal);
          if (!this.survived(scope)) return never();
          if (scope) scope.sideEffectAt = scope.requests;
          return sent;
        } finally {
          const left = (this.mailSenders.get(messageId) ?? []).filter((id) => id !== scope?.id);
          if (left.length) this.mailSenders.set(messageId, left);
          else this.mailSenders.delete(messageId);
        }
      },
    };
  }
}
