import type { PreparedJob, TransactItem } from '../jobs/index.ts';

/**
 * What the calls context asks of the rest of redial, as interfaces it owns; the composition root
 * (functions/app) wires them to the webhooks and mail contexts. Each answer is a set of items for the
 * caller's TransactWriteItems and the jobs among them (their wake-ups are sent after the commit), so a
 * domain change and what it announces commit together or not at all.
 */
export interface CallsPorts {
  events: EventPublisher;
  ownerMail: OwnerMail;
  /**
   * The tenant's calendars, which a batch's `appointments` names (the calendar context). Absent in a
   * function that creates no batch (the intake, the calls workers): their bundles carry no calendar store.
   */
  calendars?: AppointmentCalendars;
}

/** The events the calls context announces to tenants' endpoints. */
export const CallsEvent = {
  callCompleted: 'call.completed',
  batchRoundScheduled: 'batch.round_scheduled',
  batchFinalised: 'batch.finalised',
  /** A batch paused for 30 days was cancelled (control/service.ts). */
  batchCancelled: 'batch.cancelled',
  contactOptedOut: 'contact.opted_out',
} as const;

export type CallsEventType = (typeof CallsEvent)[keyof typeof CallsEvent];

/** Writes that commit with the caller's change, and the jobs among them to wake once it has committed. */
export interface Contribution {
  items: TransactItem[];
  jobs: PreparedJob[];
}

/**
 * Publishes an event (what delivers it to the tenant's endpoints) in the caller's transaction. It may read
 * and write first (which endpoints subscribe; a free endpoint's lease, taken for the delivery); after the
 * commit the caller runs `afterCommit`, which wakes the publication's own jobs (its `jobs` are empty: none
 * for the caller to wake), and if the transaction does not commit, `abandon`, which undoes what it wrote
 * first. Neither throws.
 */
export interface EventPublisher {
  prepare(input: { tenantId: string; type: CallsEventType; data: Record<string, unknown>; /** A deterministic id, for an event a replayed request must not announce twice (default: a new one). */ id?: string }, now: number): Promise<Contribution & { eventId: string; afterCommit(): Promise<void>; abandon(): Promise<void> }>;
}

/** The tenant owner's mail. */
export interface OwnerMail {
  /** Tells the owner a batch is finalised (owner.notify), about event `eventId`, in the caller's transaction. */
  batchFinalised(input: { tenantId: string; eventId: string; summary: Record<string, unknown> }): Contribution;
  /**
   * What a tenant PUT writes beside the tenant for its owner address: a new or changed address is asked
   * to confirm itself (a confirmation mail); the address already confirmed writes nothing.
   */
  ownerEmailChanged(input: { tenantId: string; ownerEmail: string; now: number }): Promise<Contribution>;
}

/** The calendars a batch books appointments into (`appointments.calendarId`). */
export interface AppointmentCalendars {
  /**
   * What a new batch's transaction carries when its `appointments` name `calendarId`: the calendar records
   * the batch, so it cannot be deleted while the batch is live. One item, named `calendar`, refused
   * (`ConditionalCheckFailed`) if the calendar is deleted before the batch commits. Undefined: the tenant
   * has no such calendar.
   */
  useForBatch(input: { tenantId: string; calendarId: string; batchId: string }): Promise<Contribution | undefined>;
}
