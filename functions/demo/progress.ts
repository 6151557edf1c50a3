/**
 * The demo's live progress as text: pure functions from what the demo read through the API to lines,
 * so what a person sees is tested exactly. progress-view.ts puts them on the screen.
 */

/** Contact statuses in the order a contact passes through them. */
export const CONTACT_STATUSES = ['Queued', 'Calling', 'Completed', 'RetryEligible'] as const;

/**
 * A delivery's states, grouped as the demo shows them per endpoint (every state falls in one group):
 * its job's, or `waiting` for one waiting in the endpoint's list with no job yet; `completed` counts every
 * delivery that succeeded (the endpoint's count: most have no job).
 */
export const DELIVERY_OUTCOMES = [
  { label: 'delivered', states: ['completed'] },
  { label: 'pending', states: ['scheduled', 'available', 'running', 'waiting'] },
  { label: 'retrying', states: ['retryable'] },
  { label: 'snoozed', states: ['snoozed'] },
  { label: 'discarded', states: ['discarded'] },
  { label: 'cancelled', states: ['cancelled'] },
] as const;

/** One customer endpoint of the demo: its deliveries by job state, and what its receiver answered. */
export interface EndpointProgress {
  name: string;
  /** Deliveries to this endpoint, by state: webhook.deliver jobs', `waiting` (no job yet), `completed` (every success). */
  byState: Record<string, number>;
  /** The receiver's answers by HTTP status (what this process saw; a restart starts them again). */
  answers: Record<string, number>;
}

/** One contact as `GET /v1/batches/{id}/contacts` lists it. */
export interface ContactSeen {
  status: string;
  /** Dials so far, one per round the contact was called in. */
  attempts: number;
}

/** Everything the demo shows while it runs, read from the API in one poll. */
export interface DemoProgress {
  elapsedMs: number;
  batchId: string;
  status: string;
  round: number;
  maxAttempts: number;
  /** Contacts of the current round, and how many of them are done with it. */
  roundContacts: { done: number; total: number };
  contactsByStatus: Record<string, number>;
  contactsByCode: Record<string, number>;
  endpoints: EndpointProgress[];
  mail: { sent: number; snoozed: number; dropped: number };
  /** Discarded jobs counted by kind, then by discard reason. */
  discards: Record<string, Record<string, number>>;
  /** Set when the demo was stopped (Ctrl-C) before it settled. */
  stopped?: boolean;
}

/**
 * The contacts of round `round` and how many are done with it. A contact is in the round unless it was
 * completed in an earlier one (fewer dials than the round, and no longer waiting to be dialled); it is
 * done once dialled this round and no longer Calling.
 */
export function roundContacts(round: number, contacts: readonly ContactSeen[]): { done: number; total: number } {
  const inRound = contacts.filter((c) => !(c.status === 'Completed' && c.attempts < round));
  return { done: inRound.filter((c) => c.attempts >= round && c.status !== 'Calling').length, total: inRound.length };
}

const BAR_WIDTH = 30;
const sum = (values: Iterable<number>) => [...values].reduce((a, b) => a + b, 0);
const seconds = (ms: number) => `${Math.floor(ms / 1000)} s`;

/** A bar of `width` cells, filled for done of total (full only when all are done). */
export function progressBar(done: number, total: number, width = BAR_WIDTH): string {
  const filled = total > 0 ? Math.min(width, Math.floor((done / total) * width)) : 0;
  return '█'.repeat(filled) + '░'.repeat(width - filled);
}

/** Rows of cells laid out in columns, each as wide as its widest cell: `r` columns (numbers) to the right. */
function table(rows: readonly (readonly string[])[], align: string, gap = 2): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, i) => (align[i] === 'r' ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join(' '.repeat(gap))
      .trimEnd(),
  );
}

const outcomeCount = (byState: Record<string, number>, states: readonly string[]) => sum(states.map((s) => byState[s] ?? 0));

/**
 * The block a terminal shows and updates in place: the round with its bar, contacts by status and by
 * code side by side, deliveries by outcome per endpoint, mail, and discards by kind and reason.
 */
export function renderBlock(p: DemoProgress): string[] {
  const lines: string[] = [];
  lines.push(`demo · batch ${p.batchId} · ${p.status} · ${seconds(p.elapsedMs)}${p.stopped ? ' · stopped' : ''}`);
  lines.push(`round ${p.round}/${p.maxAttempts}  ${progressBar(p.roundContacts.done, p.roundContacts.total)}  ${p.roundContacts.done}/${p.roundContacts.total} contacts done`);
  lines.push('');

  const statuses = [...CONTACT_STATUSES, ...Object.keys(p.contactsByStatus).filter((s) => !(CONTACT_STATUSES as readonly string[]).includes(s))];
  const codes = Object.keys(p.contactsByCode).sort();
  const contactRows: string[][] = [['contacts', 'by status', '', 'by code', '']];
  for (let i = 0; i < Math.max(statuses.length, codes.length); i++) {
    const status = statuses[i];
    const code = codes[i];
    contactRows.push([
      '',
      status ?? '',
      status === undefined ? '' : String(p.contactsByStatus[status] ?? 0),
      code ?? '',
      code === undefined ? '' : String(p.contactsByCode[code] ?? 0),
    ]);
  }
  lines.push(...table(contactRows, 'llrlr'));
  lines.push('');

  // The cancelled column only when something was cancelled (by an operator; the demo cancels nothing).
  const outcomes = DELIVERY_OUTCOMES.filter((o) => o.label !== 'cancelled' || p.endpoints.some((e) => outcomeCount(e.byState, o.states) > 0));
  const deliveryRows: string[][] = [['deliveries', ...outcomes.map((o) => o.label), 'answered']];
  for (const e of p.endpoints) {
    const answers = Object.entries(e.answers)
      .filter(([, n]) => n > 0)
      .map(([status, n]) => `${status}×${n}`)
      .join(' ');
    deliveryRows.push([`  ${e.name}`, ...outcomes.map((o) => String(outcomeCount(e.byState, o.states))), answers]);
  }
  lines.push(...table(deliveryRows, `l${'r'.repeat(outcomes.length)}l`));
  lines.push('');

  lines.push(`mail      ${p.mail.sent} sent · ${p.mail.snoozed} snoozed · ${p.mail.dropped} dropped`);
  const kinds = Object.keys(p.discards).sort();
  if (kinds.length === 0) lines.push('discards  none');
  const kindWidth = Math.max(0, ...kinds.map((k) => k.length));
  kinds.forEach((kind, i) => {
    const reasons = Object.entries(p.discards[kind]!)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ');
    lines.push(`${i === 0 ? 'discards' : ''}`.padEnd(10) + `${kind.padEnd(kindWidth)}  ${reasons}`);
  });
  return lines;
}

/**
 * The short line printed every few seconds where stdout is not a terminal (CI, a log file): the round,
 * deliveries settled and pending, mail sent and discards, in under 100 columns.
 */
export function renderLine(p: DemoProgress): string {
  const all = (states: readonly string[]) => sum(p.endpoints.map((e) => outcomeCount(e.byState, states)));
  const delivered = all(['completed']);
  const discarded = all(['discarded', 'cancelled']);
  const pending = all(['scheduled', 'available', 'running', 'retryable', 'snoozed']);
  const discards = sum(Object.values(p.discards).flatMap((r) => Object.values(r)));
  const round =
    p.status === 'InProgress' || p.status === 'Pending'
      ? `${p.roundContacts.done}/${p.roundContacts.total} done`
      : p.status.toLowerCase();
  return (
    `[${String(Math.floor(p.elapsedMs / 1000)).padStart(3)} s] round ${p.round}/${p.maxAttempts} ${round}` +
    ` · webhooks ${delivered} ok, ${pending} pending, ${discarded} discarded · mail ${p.mail.sent} · discards ${discards}`
  );
}
