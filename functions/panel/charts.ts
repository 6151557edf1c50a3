import { html } from './html.ts';
import type { Html } from './html.ts';

/**
 * The panel's charts: pure functions from numbers to inline SVG, drawn on the server (no build step, no
 * script). Every label goes through the `html` template, so through the one escapeHtml
 * (functions/platform/html.ts). Each chart is an `<svg role="img">` whose `<title>` and `<desc>` name it
 * for a screen reader, and each bar or segment carries its own `<title>` (the number, on hover).
 *
 * Coordinates are rounded to one decimal, so the output is exact for a test to compare.
 */

/** One stacked category (a code, an outcome, a state, a kind) and its fill. */
export interface ChartSeries {
  key: string;
  label: string;
  color: string;
}

/** One column of a stacked chart: its label and its value per series key (missing keys are 0). */
export interface ChartColumn {
  label: string;
  values: Readonly<Record<string, number>>;
}

/** A vertical line across the plot at a (fractional) column position: `at` 0 is the left edge of the first column. */
export interface ChartMarker {
  at: number;
  label: string;
}

/** A chart's name and one-sentence description: its `<title>` and `<desc>`, and the figure's caption. */
export interface ChartText {
  /** Unique on the page: the SVG's title and description are referenced by id. */
  id: string;
  title: string;
  description: string;
}

const r1 = (n: number): number => Math.round(n * 10) / 10;
const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** A palette for categories without a colour of their own (codes, kinds), in order; it repeats after ten. */
export const PALETTE: readonly string[] = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];

/** Series for keys without a meaning of their own: each key its label, colours from {@link PALETTE} in order. */
export const paletteSeries = (keys: readonly string[]): ChartSeries[] => keys.map((key, i) => ({ key, label: key, color: PALETTE[i % PALETTE.length]! }));

/** A value axis top: the smallest of 1, 2, 5 × 10ⁿ at or above `max` (at least 1). */
export function niceMax(max: number): number {
  if (max <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= max) return step * magnitude;
  return 10 * magnitude;
}

function legend(series: readonly ChartSeries[]): Html {
  return html`<ul class="legend">${series.map((s) => html`<li><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${s.color}"/></svg> ${s.label}</li>`)}</ul>`;
}

function frame(text: ChartText, width: number, height: number, body: Html, series: readonly ChartSeries[] | undefined): Html {
  return html`<figure class="chart" id="${text.id}">
<svg role="img" aria-labelledby="${text.id}-title ${text.id}-desc" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">
<title id="${text.id}-title">${text.title}</title>
<desc id="${text.id}-desc">${text.description}</desc>
${body}
</svg>
<figcaption>${text.title}${series && series.length ? legend(series) : ''}</figcaption>
</figure>`;
}

/**
 * Columns of stacked segments, one segment per series with a value (bottom up, in series order), the
 * column's total above it (when not 0), its label below (every `labelEvery`th column's), and optional
 * markers (a dashed line with its label) across the plot. An empty chart (every total 0) says so
 * instead of drawing nothing.
 *
 * @example
 * stackedColumns({ id: 'rounds', title: 'Outcomes by round', description: '…' },
 *   [{ label: 'Round 1', values: { NO_PICKUP: 3, COMPLETED: 5 } }], paletteSeries(['COMPLETED', 'NO_PICKUP']));
 */
export function stackedColumns(
  text: ChartText,
  columns: readonly ChartColumn[],
  series: readonly ChartSeries[],
  options: { markers?: readonly ChartMarker[]; width?: number; height?: number; unit?: string; labelEvery?: number } = {},
): Html {
  const width = options.width ?? 480;
  const height = options.height ?? 200;
  const unit = options.unit ?? 'item';
  const labelEvery = options.labelEvery ?? 1;
  const top = 16;
  const bottom = 24;
  const left = 36;
  const plotWidth = width - left - 8;
  const plotHeight = height - top - bottom;
  const totals = columns.map((c) => series.reduce((sum, s) => sum + (c.values[s.key] ?? 0), 0));
  if (!columns.length || totals.every((t) => t === 0)) {
    return frame(text, width, 40, html`<text x="${width / 2}" y="24" text-anchor="middle" class="chart-empty">nothing to draw yet</text>`, undefined);
  }
  const max = niceMax(Math.max(...totals));
  const slot = plotWidth / columns.length;
  const barWidth = r1(Math.min(48, slot * 0.7));
  const y = (value: number) => r1(top + plotHeight - (value / max) * plotHeight);
  const axis = html`<g class="axis"><line x1="${left}" y1="${top + plotHeight}" x2="${left + plotWidth}" y2="${top + plotHeight}" stroke="#888"/><text x="${left - 4}" y="${y(max) + 4}" text-anchor="end">${max}</text><text x="${left - 4}" y="${top + plotHeight + 4}" text-anchor="end">0</text></g>`;
  const bars = columns.map((column, i) => {
    const x = r1(left + slot * i + (slot - barWidth) / 2);
    let base = 0;
    const segments = series.flatMap((s) => {
      const value = column.values[s.key] ?? 0;
      if (value <= 0) return [];
      const y0 = y(base);
      base += value;
      const y1 = y(base);
      return [html`<rect x="${x}" y="${y1}" width="${barWidth}" height="${r1(y0 - y1)}" fill="${s.color}"><title>${column.label}: ${s.label} ${value}</title></rect>`];
    });
    const centre = r1(x + barWidth / 2);
    const total = totals[i]!;
    const label = i % labelEvery === 0 ? html`<text x="${centre}" y="${height - 8}" text-anchor="middle">${column.label}</text>` : '';
    return html`<g class="column"><title>${column.label}: ${plural(total, unit)}</title>${segments}${total ? html`<text x="${centre}" y="${r1(y(total) - 3)}" text-anchor="middle">${total}</text>` : ''}${label}</g>`;
  });
  // Each marker's label one line below the last one's, so markers at the same time stay readable.
  const markers = (options.markers ?? []).map((m, i) => {
    const x = r1(left + slot * m.at);
    return html`<g class="marker"><title>${m.label}</title><line x1="${x}" y1="${top - 4}" x2="${x}" y2="${top + plotHeight}" stroke="#a4161a" stroke-dasharray="4 3"/><text x="${r1(x + 3)}" y="${top + 6 + i * 12}" fill="#a4161a">${m.label}</text></g>`;
  });
  return frame(text, width, height, html`${axis}${bars}${markers}`, series);
}

/**
 * Horizontal bars, one per row (a state, a kind), each with its value at its end; rows with nothing are
 * drawn too (a bar of zero length), so the chart always lists the same rows.
 */
export function horizontalBars(text: ChartText, rows: readonly { label: string; value: number; color: string; href?: string }[], options: { width?: number; unit?: string } = {}): Html {
  const width = options.width ?? 480;
  const rowHeight = 20;
  const left = 96;
  const plotWidth = width - left - 48;
  const height = rows.length * rowHeight + 8;
  const unit = options.unit ?? 'item';
  const max = niceMax(Math.max(0, ...rows.map((r) => r.value)));
  const body = rows.map((row, i) => {
    const y = 4 + i * rowHeight;
    const length = r1((row.value / max) * plotWidth);
    const label = html`<text x="${left - 6}" y="${y + 13}" text-anchor="end">${row.label}</text>`;
    return html`<g class="bar"><title>${row.label}: ${plural(row.value, unit)}</title>${row.href ? html`<a href="${row.href}">${label}</a>` : label}<rect x="${left}" y="${y + 2}" width="${length}" height="${rowHeight - 6}" fill="${row.color}"/><text x="${r1(left + length + 4)}" y="${y + 13}">${row.value}</text></g>`;
  });
  return frame(text, width, height, html`${body}`, undefined);
}

/**
 * Equal time buckets, the last one holding `end` (epoch ms): `count` of them, `sizeMs` each, oldest first.
 * Each has its start and a short UTC label: the time of day (`14:05`) for buckets under a day, the date
 * (`01-05`) for longer ones.
 */
export function timeBuckets(end: number, sizeMs: number, count: number): { start: number; label: string }[] {
  const last = Math.floor(end / sizeMs) * sizeMs;
  return Array.from({ length: count }, (_, i) => {
    const start = last - (count - 1 - i) * sizeMs;
    const iso = new Date(start).toISOString();
    return { start, label: sizeMs >= 86_400_000 ? iso.slice(5, 10) : iso.slice(11, 16) };
  });
}

/** Where `at` (epoch ms) falls on columns of {@link timeBuckets}: a fractional column position, clamped to the plot. */
export function bucketPosition(buckets: readonly { start: number }[], sizeMs: number, at: number): number {
  if (!buckets.length) return 0;
  const position = (at - buckets[0]!.start) / sizeMs;
  return Math.min(Math.max(position, 0), buckets.length);
}
