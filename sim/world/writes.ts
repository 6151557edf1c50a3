import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { WebhookEvent } from '../../functions/webhooks/events.ts';
import { batchIdOfPartition } from '../../functions/calls/model.ts';
import { endpointIdOfWaitList } from '../../functions/webhooks/endpoint.ts';

/**
 * What the writes DynamoDB applied say, as the world sees them at the client (the fault injector's
 * `onApplied`: whatever the caller then saw, a lost answer included). The tables keep only the latest
 * state of a contact, and an event leaves no row of its own once it is delivered (it travels in its
 * delivery's job or wait-list entry: functions/webhooks/publish.ts), so the invariants read these instead:
 *
 * - every completion of a call (a contact's write to Completed, with the call id, round, code and source);
 * - every event a delivery was written for, and to which endpoint (a webhook.deliver job, a wait-list entry,
 *   a webhook.fanout job carrying it);
 * - every batch finalised.
 */

/** A completion of a call, as its transaction wrote it. */
export interface AppliedCompletion {
  batchId: string;
  contactNumber: string;
  round: number;
  callId: string | undefined;
  code: string;
  source: string;
  /** The world's clock when it was applied. */
  at: number;
}

/** A batch finalised, as its transaction wrote it. */
export interface AppliedFinalisation {
  batchId: string;
  at: number;
}

/** A pause or a resume of a batch, as its write committed (a resume takes `pausedAt` off the row). */
export interface AppliedControl {
  batchId: string;
  kind: 'pause' | 'resume';
  /** When the world saw it applied (at or after its commit). */
  at: number;
  /** When it was decided (the `updatedAt` it writes: at or before its commit). */
  decidedAt: number;
}

/** A number put on (or taken off) a tenant's suppression list, as its write committed. */
export interface AppliedSuppression {
  tenantId: string;
  number: string;
  kind: 'added' | 'removed';
  at: number;
}

/**
 * A dial's claim of a cap slot (compliance/cap.ts), one per call a dial committed: its number, call and
 * batch, the dial's time as the claim holds it (`dialledAt`, the `now` the dial was decided at) and when the
 * world saw it applied (`at`).
 */
export interface AppliedCapClaim {
  tenantId: string;
  number: string;
  batchId: string;
  callId: string;
  slot: number;
  dialledAt: number;
  at: number;
}

type Raw = Record<string, AttributeValue>;
/** One write of a request, as the client marshalled it: a Put's item, or an Update's key and expressions. */
export type WriteItem = { TableName?: string; Item?: Raw; Key?: Raw; UpdateExpression?: string; ConditionExpression?: string; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Raw };

/** The attributes an Update sets, or its condition compares for equality (`#a = :v` in either), by name. */
export function assigned(write: WriteItem): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const names = write.ExpressionAttributeNames ?? {};
  const values = write.ExpressionAttributeValues ?? {};
  for (const text of [write.ConditionExpression ?? '', write.UpdateExpression ?? '']) {
    for (const [, name, value] of text.matchAll(/(#[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)(?![A-Za-z0-9_(])/g)) {
      const attribute = names[name!];
      const raw = values[value!];
      if (attribute !== undefined && raw !== undefined) out[attribute] = unmarshall({ v: raw })['v'];
    }
  }
  return out;
}

/** The completion a write of a contact item makes (its key and the attributes written), if it completes one. */
export function completionOf(pk: unknown, sk: unknown, values: Record<string, unknown>, at: number): AppliedCompletion | undefined {
  if (typeof pk !== 'string' || typeof sk !== 'string' || !sk.startsWith('CONTACT#') || values['status'] !== 'Completed') return undefined;
  return {
    batchId: batchIdOfPartition(pk) ?? pk,
    contactNumber: sk.slice('CONTACT#'.length),
    round: Number(values['round']),
    callId: typeof values['callId'] === 'string' ? values['callId'] : undefined,
    code: String(values['code']),
    source: String(values['source']),
    at,
  };
}

/** Every completion the writes of one applied transaction make. */
export function completionsIn(input: Record<string, unknown>, at: number): AppliedCompletion[] {
  const items = (input['TransactItems'] as Record<string, WriteItem>[] | undefined) ?? [];
  return items.flatMap((item) => {
    const [type, body] = Object.entries(item)[0]!;
    if (type === 'Put' && body.Item) {
      const row = unmarshall(body.Item);
      return completionOf(row['pk'], row['sk'], row, at) ?? [];
    }
    if (type === 'Update' && body.Key) {
      const key = unmarshall(body.Key);
      return completionOf(key['pk'], key['sk'], assigned(body), at) ?? [];
    }
    return [];
  });
}

export class AppliedWrites {
  readonly completions: AppliedCompletion[] = [];
  readonly finalisations: AppliedFinalisation[] = [];
  /** Pauses and resumes of batches, in the order they were applied. */
  readonly controls: AppliedControl[] = [];
  /** Suppression entries written and deleted, in order. */
  readonly suppressions: AppliedSuppression[] = [];
  /** Every cap slot claimed by a dial. */
  readonly capClaims: AppliedCapClaim[] = [];
  /** Every event a delivery (or a fanout) was written for, by id. */
  readonly events = new Map<string, WebhookEvent>();
  /** `<endpoint id> <event id>`: a delivery of that event to that endpoint was written (a job or an entry). */
  readonly targets = new Set<string>();
  /**
   * Deliveries a recovery requeued (`webhook.deliver:<event>:<endpoint>:<recovery id>`), by job id: their
   * event, endpoint, recovery, and when the page that requeued them committed.
   */
  readonly recovered = new Map<string, { endpointId: string; eventId: string; recoveryId: string; at: number }>();
  /** Events whose webhook.fanout job was written. */
  readonly fanouts = new Set<string>();
  /**
   * `<endpoint id> <event id>` → when the delivery was first written as a wait-list entry with no job (to be
   * sent by whoever holds the endpoint's lease, or stranded behind a lease nobody uses).
   */
  readonly entries = new Map<string, number>();

  private readonly tables: { calls: string; jobs: string; webhooks: string };
  private readonly now: () => number;

  constructor(tables: { calls: string; jobs: string; webhooks: string }, now: () => number) {
    this.tables = tables;
    this.now = now;
  }

  /** One applied request (`input` as the client marshalled it). */
  applied(operation: string, input: Record<string, unknown>): void {
    if (operation === 'TransactWriteItems') {
      const items = (input['TransactItems'] as Record<string, WriteItem>[] | undefined) ?? [];
      const writes = items.map((item) => Object.entries(item)[0]!).map(([type, body]) => ({ type, body }));
      for (const w of writes) this.write(w.type, w.body);
      this.finalised(writes);
      for (const w of writes) this.compliance(w.type, w.body);
    } else if (operation === 'PutItem' || operation === 'UpdateItem' || operation === 'DeleteItem') {
      const type = operation === 'PutItem' ? 'Put' : operation === 'UpdateItem' ? 'Update' : 'Delete';
      if (type === 'Put') this.write(type, input);
      this.compliance(type, input);
    }
  }

  /** What the control and compliance invariants read: pauses and resumes, suppressions, cap claims. */
  private compliance(type: string, body: WriteItem): void {
    if (body.TableName !== this.tables.calls) return;
    const key = body.Key ? unmarshall(body.Key) : body.Item ? unmarshall(body.Item) : undefined;
    if (!key) return;
    const pk = String(key['pk']);
    const sk = String(key['sk']);
    const suppression = /^TENANT#(.+)#SUPP#\d+$/.exec(pk);
    if (suppression && sk.startsWith('NUMBER#') && (type === 'Update' || type === 'Put' || type === 'Delete')) {
      this.suppressions.push({ tenantId: suppression[1]!, number: sk.slice('NUMBER#'.length), kind: type === 'Delete' ? 'removed' : 'added', at: this.now() });
      return;
    }
    const cap = /^TENANT#(.+?)#CAP#(\+\d+)/.exec(pk);
    if (cap && sk.startsWith('SLOT#') && type === 'Put' && body.Item) {
      const row = unmarshall(body.Item);
      this.capClaims.push({ tenantId: cap[1]!, number: cap[2]!, batchId: String(row['batchId']), callId: String(row['callId']), slot: Number(row['slot']), dialledAt: Number(row['at']), at: this.now() });
      return;
    }
    if (sk === 'BATCH' && type === 'Update') {
      const batchId = batchIdOfPartition(pk) ?? pk;
      const values = assigned(body);
      const status = values['status'];
      const decidedAt = typeof values['updatedAt'] === 'string' ? Date.parse(values['updatedAt']) : this.now();
      const removesPause = /\bREMOVE\b/.test(body.UpdateExpression ?? '') && Object.values(body.ExpressionAttributeNames ?? {}).includes('pausedAt');
      if (removesPause && status !== 'Paused') this.controls.push({ batchId, kind: 'resume', at: this.now(), decidedAt });
      else if (status === 'Paused') this.controls.push({ batchId, kind: 'pause', at: this.now(), decidedAt });
    }
  }

  private write(type: string, body: WriteItem): void {
    if (type === 'Put' && body.Item) {
      const item = unmarshall(body.Item);
      if (body.TableName === this.tables.jobs) this.job(item);
      else if (body.TableName === this.tables.webhooks && typeof item['pk'] === 'string' && endpointIdOfWaitList(item['pk']) && item['event']) {
        const endpointId = endpointIdOfWaitList(item['pk'])!;
        const event = item['event'] as WebhookEvent;
        const key = `${endpointId} ${event.id}`;
        if (!this.targets.has(key)) this.entries.set(key, this.now());
        this.target(endpointId, event);
      } else if (body.TableName === this.tables.calls) this.contact(item['pk'], item['sk'], item);
    } else if (type === 'Update' && body.TableName === this.tables.calls && body.Key) {
      const key = unmarshall(body.Key);
      this.contact(key['pk'], key['sk'], assigned(body));
    }
  }

  private job(row: Record<string, unknown>): void {
    const args = row['args'] as { event?: WebhookEvent; endpointId?: string } | undefined;
    if (!args?.event) return;
    if (row['kind'] === 'webhook.deliver' && args.endpointId) {
      this.target(args.endpointId, args.event);
      const recoveryId = /:(rcv_[0-9a-f]+)$/.exec(String(row['id']))?.[1];
      if (recoveryId && !this.recovered.has(String(row['id']))) this.recovered.set(String(row['id']), { endpointId: args.endpointId, eventId: args.event.id, recoveryId, at: this.now() });
    }
    if (row['kind'] === 'webhook.fanout') {
      this.events.set(args.event.id, args.event);
      this.fanouts.add(args.event.id);
    }
  }

  private target(endpointId: string, event: WebhookEvent): void {
    this.events.set(event.id, event);
    this.targets.add(`${endpointId} ${event.id}`);
  }

  private contact(pk: unknown, sk: unknown, values: Record<string, unknown>): void {
    const completion = completionOf(pk, sk, values, this.now());
    if (completion) this.completions.push(completion);
  }

  private finalised(writes: { type: string; body: WriteItem }[]): void {
    for (const { type, body } of writes) {
      if (type !== 'Update' || body.TableName !== this.tables.calls || !body.Key) continue;
      const key = unmarshall(body.Key);
      if (key['sk'] !== 'BATCH' || assigned(body)['status'] !== 'Finalised') continue;
      this.finalisations.push({ batchId: batchIdOfPartition(String(key['pk'])) ?? String(key['pk']), at: this.now() });
    }
  }
}
