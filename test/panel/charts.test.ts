import { describe, expect, it } from 'vitest';
import { bucketPosition, horizontalBars, niceMax, stackedColumns, timeBuckets } from '../../functions/panel/charts.ts';
import { deliveriesFigure, discardsFigure, roundsFigure } from '../../functions/panel/figures.ts';
import { filterQuery, parseTimeFilter } from '../../functions/panel/filters.ts';

/** The SVG's markup between its <svg> and </svg>, one line per element group, for exact comparison. */
const svgBody = (figure: { value: string }): string => /<svg[^>]*>\n([\s\S]*)\n<\/svg>/.exec(figure.value)?.[1] ?? '';

describe('the chart renderers: exact SVG for small inputs', () => {
  it('StackedColumnsDrawEachSeriesBottomUpWithTotalsLabelsAMarkerAndEscapedText', () => {
    const figure = stackedColumns(
      { id: 'c', title: 'Outcomes <by> round', description: 'round 1: A 2, B 1' },
      [
        { label: 'R1', values: { A: 2, B: 1 } },
        { label: 'R2', values: { A: 1 } },
      ],
      [
        { key: 'A', label: 'A', color: '#111' },
        { key: 'B', label: 'B&C', color: '#222' },
      ],
      { width: 200, height: 100, markers: [{ at: 1, label: 'disabled' }] },
    );
    // Plot 156 × 60 from (36, 16); axis top 5 (niceMax of 3); columns 78 wide, bars 48, centred.
    expect(figure.value).toBe(`<figure class="chart" id="c">
<svg role="img" aria-labelledby="c-title c-desc" viewBox="0 0 200 100" width="200" height="100">
<title id="c-title">Outcomes &lt;by&gt; round</title>
<desc id="c-desc">round 1: A 2, B 1</desc>
<g class="axis"><line x1="36" y1="76" x2="192" y2="76" stroke="#888"/><text x="32" y="20" text-anchor="end">5</text><text x="32" y="80" text-anchor="end">0</text></g>\
<g class="column"><title>R1: 3 items</title><rect x="51" y="52" width="48" height="24" fill="#111"><title>R1: A 2</title></rect><rect x="51" y="40" width="48" height="12" fill="#222"><title>R1: B&amp;C 1</title></rect><text x="75" y="37" text-anchor="middle">3</text><text x="75" y="92" text-anchor="middle">R1</text></g>\
<g class="column"><title>R2: 1 item</title><rect x="129" y="64" width="48" height="12" fill="#111"><title>R2: A 1</title></rect><text x="153" y="61" text-anchor="middle">1</text><text x="153" y="92" text-anchor="middle">R2</text></g>\
<g class="marker"><title>disabled</title><line x1="114" y1="12" x2="114" y2="76" stroke="#a4161a" stroke-dasharray="4 3"/><text x="117" y="22" fill="#a4161a">disabled</text></g>
</svg>
<figcaption>Outcomes &lt;by&gt; round<ul class="legend"><li><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="#111"/></svg> A</li><li><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="#222"/></svg> B&amp;C</li></ul></figcaption>
</figure>`);
  });

  it('HorizontalBarsScaleToTheAxisTopAndLinkTheirLabels', () => {
    const figure = horizontalBars(
      { id: 'h', title: 'Jobs', description: 'd' },
      [
        { label: 'completed', value: 4, color: '#0f0', href: '/panel/jobs?state=completed' },
        { label: 'discarded', value: 1, color: '#f00' },
      ],
      { width: 200, unit: 'job' },
    );
    // 56 px of plot for an axis top of 5: 4 → 44.8, 1 → 11.2.
    expect(svgBody(figure)).toBe(`<title id="h-title">Jobs</title>
<desc id="h-desc">d</desc>
<g class="bar"><title>completed: 4 jobs</title><a href="/panel/jobs?state=completed"><text x="90" y="17" text-anchor="end">completed</text></a><rect x="96" y="6" width="44.8" height="14" fill="#0f0"/><text x="144.8" y="17">4</text></g>\
<g class="bar"><title>discarded: 1 job</title><text x="90" y="37" text-anchor="end">discarded</text><rect x="96" y="26" width="11.2" height="14" fill="#f00"/><text x="111.2" y="37">1</text></g>`);
  });

  it('AnEmptyChartSaysSoInsteadOfDrawingAnAxisWithNothingOnIt', () => {
    const figure = stackedColumns({ id: 'e', title: 'Empty', description: 'none' }, [{ label: 'x', values: {} }], [{ key: 'A', label: 'A', color: '#111' }]);
    expect(svgBody(figure)).toBe(`<title id="e-title">Empty</title>
<desc id="e-desc">none</desc>
<text x="240" y="24" text-anchor="middle" class="chart-empty">nothing to draw yet</text>`);
  });

  it('NiceMaxTimeBucketsAndBucketPositions', () => {
    expect([0, 1, 3, 7, 10, 11, 230, 5000].map(niceMax)).toEqual([1, 1, 5, 10, 10, 20, 500, 5000]);
    const end = Date.parse('2026-01-05T09:30:00Z');
    expect(timeBuckets(end, 3_600_000, 3)).toEqual([
      { start: Date.parse('2026-01-05T07:00:00Z'), label: '07:00' },
      { start: Date.parse('2026-01-05T08:00:00Z'), label: '08:00' },
      { start: Date.parse('2026-01-05T09:00:00Z'), label: '09:00' },
    ]);
    expect(timeBuckets(end, 86_400_000, 2).map((b) => b.label)).toEqual(['01-04', '01-05']);
    const buckets = timeBuckets(end, 60_000, 4);
    expect(bucketPosition(buckets, 60_000, Date.parse('2026-01-05T09:28:30Z'))).toBe(1.5);
    expect(bucketPosition(buckets, 60_000, 0)).toBe(0);
    expect(bucketPosition(buckets, 60_000, end + 3_600_000)).toBe(4);
  });
});

describe('the panel figures: what each page draws from what the API answers', () => {
  it('RoundsFigureStacksEachRoundsCodesLargestFirstAndWhatHasNoOutcomeYet', () => {
    const figure = roundsFigure([
      { round: 1, byCode: { COMPLETED: 2, NO_PICKUP: 1 }, pending: 0, recorded: true },
      { round: 2, byCode: {}, pending: 1, recorded: true },
    ]);
    expect(svgBody(figure)).toBe(`<title id="chart-rounds-title">Outcomes by code, per round</title>
<desc id="chart-rounds-desc">round 1: COMPLETED 2, NO_PICKUP 1; round 2: 1 without an outcome yet</desc>
<g class="axis"><line x1="36" y1="176" x2="472" y2="176" stroke="#888"/><text x="32" y="20" text-anchor="end">5</text><text x="32" y="180" text-anchor="end">0</text></g>\
<g class="column"><title>Round 1: 3 contacts</title><rect x="121" y="112" width="48" height="64" fill="#1f77b4"><title>Round 1: COMPLETED 2</title></rect><rect x="121" y="80" width="48" height="32" fill="#ff7f0e"><title>Round 1: NO_PICKUP 1</title></rect><text x="145" y="77" text-anchor="middle">3</text><text x="145" y="192" text-anchor="middle">Round 1</text></g>\
<g class="column"><title>Round 2: 1 contact</title><rect x="339" y="144" width="48" height="32" fill="#d0d7de"><title>Round 2: no outcome yet 1</title></rect><text x="363" y="141" text-anchor="middle">1</text><text x="363" y="192" text-anchor="middle">Round 2</text></g>`);
  });

  it('DeliveriesFigureBucketsAttemptsByMinuteAndMarksFailingSinceAndTheDisable', () => {
    const figure = deliveriesFigure(
      [
        { at: '2026-01-05T09:00:10.000Z', outcome: 'retryable' },
        { at: '2026-01-05T09:02:30.000Z', outcome: 'discarded' },
      ],
      { failingSince: '2026-01-05T09:00:10.000Z', disabled: true, disabledAt: '2026-01-05T09:02:31.000Z', disabledReason: 'gone' },
    );
    const body = svgBody(figure);
    expect(body).toContain('<desc id="chart-deliveries-desc">2 attempts in 6 columns of 1 min: completed 0, retryable 1, discarded 1, lost 0; failing since 2026-01-05T09:00:10.000Z; disabled at 2026-01-05T09:02:31.000Z</desc>');
    // Six one-minute columns ending with the last thing known (09:02); the attempts in 09:00 and 09:02.
    expect([...body.matchAll(/<g class="column"><title>([^<]+)<\/title>/g)].map((m) => m[1])).toEqual([
      '08:57: 0 attempts',
      '08:58: 0 attempts',
      '08:59: 0 attempts',
      '09:00: 1 attempt',
      '09:01: 0 attempts',
      '09:02: 1 attempt',
    ]);
    expect(body).toContain('<rect x="406.3" y="16" width="48" height="160" fill="#edc948"><title>09:00: retryable 1</title></rect>');
    expect(body).toContain('<rect x="631.7" y="16" width="48" height="160" fill="#e15759"><title>09:02: discarded 1</title></rect>');
    // failingSince 10 s into the fourth column (3 + 1/6 columns of 112.7 px from x 36), the disable 31 s into the sixth.
    expect(body).toContain('<g class="marker"><title>failing since</title><line x1="392.8" y1="12" x2="392.8" y2="176" stroke="#a4161a" stroke-dasharray="4 3"/><text x="395.8" y="22" fill="#a4161a">failing since</text></g>');
    expect(body).toContain('<g class="marker"><title>disabled (gone)</title><line x1="657.5" y1="12" x2="657.5" y2="176" stroke="#a4161a" stroke-dasharray="4 3"/><text x="660.5" y="34" fill="#a4161a">disabled (gone)</text></g>');
    expect(svgBody(deliveriesFigure([], { failingSince: null, disabled: false, disabledAt: null, disabledReason: null }))).toContain('nothing to draw yet');
  });

  it('DiscardsFigureCountsEachKindPerHourAndLeavesOutWhatIsOlder', () => {
    const at = (iso: string) => Date.parse(iso);
    const discards = [
      { kind: 'a.b', at: at('2026-01-05T08:30:00Z') },
      { kind: 'a.b', at: at('2026-01-05T09:10:00Z') },
      { kind: 'c.d', at: at('2026-01-05T09:20:00Z') },
      { kind: 'c.d', at: at('2026-01-05T05:20:00Z') },
    ];
    const body = svgBody(discardsFigure(discards, at('2026-01-05T09:30:00Z'), 3, false));
    expect(body).toContain('<desc id="chart-discards-desc">3 discarded jobs in the last 3 hours (UTC hours)</desc>');
    expect([...body.matchAll(/<title>([^<]+)<\/title>/g)].map((m) => m[1])).toEqual([
      '07:00: 0 discards',
      '08:00: 1 discard',
      '08:00: a.b 1',
      '09:00: 2 discards',
      '09:00: a.b 1',
      '09:00: c.d 1',
    ]);
    expect(svgBody(discardsFigure(discards, at('2026-01-05T09:30:00Z'), 3, true))).toContain('only the newest were read, earlier hours may hold more');
  });
});

describe('the jobs filter', () => {
  it('TakesAnAgeOrAnIsoTimeWithItsZoneAndRefusesAnythingElse', () => {
    const now = Date.parse('2026-01-05T09:00:00.000Z');
    expect(parseTimeFilter('2h', now)).toEqual({ iso: '2026-01-05T07:00:00.000Z' });
    expect(parseTimeFilter(' 30m ', now)).toEqual({ iso: '2026-01-05T08:30:00.000Z' });
    expect(parseTimeFilter('7d', now)).toEqual({ iso: '2025-12-29T09:00:00.000Z' });
    expect(parseTimeFilter('2026-01-05T10:00:00+01:00', now)).toEqual({ iso: '2026-01-05T09:00:00.000Z' });
    for (const bad of ['yesterday', '2026-01-05T09:00:00', '2026-01-05', '-2h', '2 weeks']) expect(parseTimeFilter(bad, now), bad).toHaveProperty('error');
    expect(filterQuery({ state: 'discarded', kind: 'webhook.deliver', reason: undefined }, { cursor: 'a b' })).toBe('?state=discarded&kind=webhook.deliver&cursor=a+b');
    expect(filterQuery({})).toBe('');
  });
});
