import { horizontalBars, paletteSeries, stackedColumns, timeBuckets, bucketPosition } from './charts.ts';
import type { ChartMarker, ChartSeries } from './charts.ts';
import type { Html } from './html.ts';

/**
 * The panel's figures: what each page draws, from what the ops API answers, through the renderers of
 * charts.ts. Pure: the API's clock comes in as `end`, so a test gives exact input and reads exact SVG.
 */

const HOUR = 3_600_000;

/** Colours with a meaning: the job states and attempt outcomes, as the panel's tables colour them. */
export const STATE_COLORS: Readonly<Record<string, string>> = {
  available: '#4e79a7',
  scheduled: '#76b7b2',
  running: '#f28e2b',
  retryable: '#edc948',
  snoozed: '#b07aa1',
  completed: '#59a14f',
  discarded: '#e15759',
  cancelled: '#9c755f',
  lost: '#bab0ac',
};

const PENDING: ChartSeries = { key: 'pending', label: 'no outcome yet', color: '#d0d7de' };

/** Keys by their total across columns, largest first (ties by name), so the biggest share sits at the bottom. */
function byTotal(columns: readonly { values: Readonly<Record<string, number>> }[]): string[] {
  const totals = new Map<string, number>();
  for (const c of columns) for (const [key, n] of Object.entries(c.values)) totals.set(key, (totals.get(key) ?? 0) + n);
  return [...totals].filter(([, n]) => n > 0).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).map(([key]) => key);
}

/** The overview's jobs by state: one bar per state, each linking to its listing. */
export function jobStatesFigure(counts: Readonly<Record<string, number>>, states: readonly string[]): Html {
  return horizontalBars(
    { id: 'chart-job-states', title: 'Jobs by state', description: states.map((s) => `${s} ${counts[s] ?? 0}`).join(', ') },
    states.map((state) => ({ label: state, value: counts[state] ?? 0, color: STATE_COLORS[state] ?? '#888', href: `/panel/jobs?state=${state}` })),
    { unit: 'job' },
  );
}

/**
 * The overview's discards by kind per hour over the `hours` before `end` (the API's clock), from the
 * discarded jobs read (`at`: when each was discarded). `truncated` says the read stopped at its cap, so
 * the oldest hours may hold more than drawn.
 */
export function discardsFigure(discards: readonly { kind: string; at: number }[], end: number, hours: number, truncated: boolean): Html {
  const buckets = timeBuckets(end, HOUR, hours);
  const columns: { label: string; values: Record<string, number> }[] = buckets.map((b) => ({ label: b.label, values: {} }));
  for (const d of discards) {
    const i = Math.floor((d.at - buckets[0]!.start) / HOUR);
    if (i < 0 || i >= columns.length) continue;
    const values = columns[i]!.values;
    values[d.kind] = (values[d.kind] ?? 0) + 1;
  }
  const total = discards.filter((d) => d.at >= buckets[0]!.start).length;
  const description = `${total} discarded job${total === 1 ? '' : 's'} in the last ${hours} hours (UTC hours)${truncated ? '; only the newest were read, earlier hours may hold more' : ''}`;
  return stackedColumns({ id: 'chart-discards', title: `Discards by kind, last ${hours} hours`, description }, columns, paletteSeries(byTotal(columns)), {
    width: 720,
    unit: 'discard',
    labelEvery: Math.max(1, Math.ceil(hours / 8)),
  });
}

/** A batch's rounds: one stacked column per round, its outcomes by code and what has none yet. */
export function roundsFigure(rounds: readonly { round: number; byCode: Readonly<Record<string, number>>; pending: number; recorded: boolean }[]): Html {
  const columns = rounds.map((r) => ({ label: `Round ${r.round}${r.recorded ? '' : ' (not recorded)'}`, values: { ...r.byCode, ...(r.pending ? { pending: r.pending } : {}) } }));
  const codes = byTotal(columns.map((c) => ({ values: Object.fromEntries(Object.entries(c.values).filter(([k]) => k !== PENDING.key)) })));
  const description = rounds
    .map((r) => {
      const parts = [...Object.entries(r.byCode).map(([code, n]) => `${code} ${n}`), ...(r.pending ? [`${r.pending} without an outcome yet`] : [])];
      return `round ${r.round}: ${parts.join(', ') || (r.recorded ? 'nothing yet' : 'not recorded')}`;
    })
    .join('; ');
  return stackedColumns({ id: 'chart-rounds', title: 'Outcomes by code, per round', description }, columns, [...paletteSeries(codes), PENDING], { unit: 'contact' });
}

/** Bucket sizes a time chart chooses from: the smallest that spans the data in at most 24 columns. */
const BUCKET_SIZES = [60_000, 5 * 60_000, 15 * 60_000, HOUR, 3 * HOUR, 6 * HOUR, 24 * HOUR, 7 * 24 * HOUR];
const MAX_COLUMNS = 24;
/** At least this many columns, the data in the last ones: a burst within one minute is still a bar among others. */
const MIN_COLUMNS = 6;

const OUTCOMES: readonly ChartSeries[] = (['completed', 'retryable', 'discarded', 'lost'] as const).map((key) => ({ key, label: key, color: STATE_COLORS[key]! }));

/**
 * An endpoint's delivery attempts by outcome over time, with its failingSince and its disable marked. The
 * time axis runs from the first attempt (or failingSince, if earlier) to the last thing known (an
 * attempt, the disable), in at most 24 and at least 6 columns: the panel reads no clock of its own.
 */
export function deliveriesFigure(
  attempts: readonly { at: string; outcome: string }[],
  endpoint: { failingSince: string | null; disabled: boolean; disabledAt: string | null; disabledReason: string | null },
): Html {
  const times = [...attempts.map((a) => Date.parse(a.at)), ...[endpoint.failingSince, endpoint.disabledAt].flatMap((t) => (t ? [Date.parse(t)] : []))];
  const text = { id: 'chart-deliveries', title: 'Delivery attempts by outcome over time' };
  if (!attempts.length) return stackedColumns({ ...text, description: 'no delivery attempt found' }, [], OUTCOMES);
  const start = Math.min(...times);
  const end = Math.max(...times);
  const size = BUCKET_SIZES.find((s) => Math.floor(end / s) - Math.floor(start / s) + 1 <= MAX_COLUMNS) ?? BUCKET_SIZES.at(-1)!;
  const buckets = timeBuckets(end, size, Math.max(MIN_COLUMNS, Math.floor(end / size) - Math.floor(start / size) + 1));
  const columns: { label: string; values: Record<string, number> }[] = buckets.map((b) => ({ label: b.label, values: {} }));
  for (const a of attempts) {
    const i = Math.floor((Date.parse(a.at) - buckets[0]!.start) / size);
    const values = columns[Math.min(Math.max(i, 0), columns.length - 1)]!.values;
    values[a.outcome] = (values[a.outcome] ?? 0) + 1;
  }
  const markers: ChartMarker[] = [];
  if (endpoint.failingSince) markers.push({ at: bucketPosition(buckets, size, Date.parse(endpoint.failingSince)), label: 'failing since' });
  if (endpoint.disabled && endpoint.disabledAt) markers.push({ at: bucketPosition(buckets, size, Date.parse(endpoint.disabledAt)), label: `disabled (${endpoint.disabledReason ?? ''})` });
  const counts = OUTCOMES.map((o) => `${o.key} ${attempts.filter((a) => a.outcome === o.key).length}`).join(', ');
  const description = `${attempts.length} attempts in ${columns.length} columns of ${size / 60_000} min: ${counts}${endpoint.failingSince ? `; failing since ${endpoint.failingSince}` : ''}${endpoint.disabled && endpoint.disabledAt ? `; disabled at ${endpoint.disabledAt}` : ''}`;
  return stackedColumns({ ...text, description }, columns, OUTCOMES, { markers, width: 720, unit: 'attempt', labelEvery: Math.max(1, Math.ceil(columns.length / 8)) });
}
