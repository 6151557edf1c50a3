import xterm from '@xterm/headless';
import { describe, expect, it } from 'vitest';
import { progressBar, renderBlock, renderLine, roundContacts } from '../../functions/demo/progress.ts';
import type { DemoProgress } from '../../functions/demo/progress.ts';
import { blockView, lineView } from '../../functions/demo/progress-view.ts';

/** The demo part-way through its first round, as one poll of the API reads it. */
function midRound(overrides: Partial<DemoProgress> = {}): DemoProgress {
  return {
    elapsedMs: 14_700,
    batchId: 'b_2f9c0a1e4d5b6c7d8e9f0a1b2c3d4e5f',
    status: 'InProgress',
    round: 1,
    maxAttempts: 3,
    roundContacts: { done: 21, total: 40 },
    contactsByStatus: { Queued: 15, Calling: 4, Completed: 21, RetryEligible: 0 },
    contactsByCode: { NO_PICKUP: 5, COMPLETED: 12, TEMPORARY_UNAVAILABLE: 2, FAILED_SIP_EXCEPTION: 2 },
    endpoints: [
      { name: 'healthy', byState: { completed: 42, available: 1 }, answers: { 200: 42 } },
      { name: 'flaky', byState: { completed: 40, retryable: 1 }, answers: { 200: 40, 500: 2 } },
      { name: 'throttled', byState: { completed: 38, snoozed: 2, running: 1 }, answers: { 200: 38, 429: 2 } },
      { name: 'gone', byState: { discarded: 5 }, answers: { 410: 1 } },
    ],
    mail: { sent: 2, snoozed: 1, dropped: 0 },
    discards: { 'webhook.deliver': { gone: 1, endpoint_disabled: 4 } },
    ...overrides,
  };
}

describe('the demo progress block', () => {
  it('ShowsTheRoundBarContactsByStatusAndCodeDeliveriesPerEndpointMailAndDiscardsInAlignedColumns', () => {
    expect(renderBlock(midRound())).toEqual([
      'demo · batch b_2f9c0a1e4d5b6c7d8e9f0a1b2c3d4e5f · InProgress · 14 s',
      'round 1/3  ███████████████░░░░░░░░░░░░░░░  21/40 contacts done',
      '',
      'contacts  by status          by code',
      '          Queued         15  COMPLETED              12',
      '          Calling         4  FAILED_SIP_EXCEPTION    2',
      '          Completed      21  NO_PICKUP               5',
      '          RetryEligible   0  TEMPORARY_UNAVAILABLE   2',
      '',
      'deliveries   delivered  pending  retrying  snoozed  discarded  answered',
      '  healthy           42        1         0        0          0  200×42',
      '  flaky             40        0         1        0          0  200×40 500×2',
      '  throttled         38        1         0        2          0  200×38 429×2',
      '  gone               0        0         0        0          5  410×1',
      '',
      'mail      2 sent · 1 snoozed · 0 dropped',
      'discards  webhook.deliver  endpoint_disabled 4, gone 1',
    ]);
  });

  it('ListsMoreCodesThanStatusesBelowTheStatusesAndEachDiscardedKindOnItsOwnLine', () => {
    const lines = renderBlock(
      midRound({
        contactsByCode: { TIMEOUT: 3, COMPLETED: 10, COMPLETED_USER_REJECTION: 2, FAILED: 3, NO_PICKUP: 12, FAILED_NO_CONVERSATION: 4 },
        discards: { 'webhook.deliver': { gone: 1 }, 'owner.notify': { exhausted: 1, smtp_rejected: 2 } },
      }),
    );
    expect(lines.slice(3, 10)).toEqual([
      'contacts  by status          by code',
      '          Queued         15  COMPLETED                 10',
      '          Calling         4  COMPLETED_USER_REJECTION   2',
      '          Completed      21  FAILED                     3',
      '          RetryEligible   0  FAILED_NO_CONVERSATION     4',
      '                             NO_PICKUP                 12',
      '                             TIMEOUT                    3',
    ]);
    expect(lines.slice(-2)).toEqual(['discards  owner.notify     exhausted 1, smtp_rejected 2', '          webhook.deliver  gone 1']);
  });

  it('AddsACancelledColumnOnlyWhenADeliveryWasCancelledAndSaysNoneWithoutDiscards', () => {
    const lines = renderBlock(
      midRound({
        endpoints: [
          { name: 'healthy', byState: { completed: 3, cancelled: 12 }, answers: { 200: 3 } },
          { name: 'gone', byState: {}, answers: {} },
        ],
        discards: {},
      }),
    );
    expect(lines.slice(9, 12)).toEqual([
      'deliveries  delivered  pending  retrying  snoozed  discarded  cancelled  answered',
      '  healthy           3        0         0        0          0         12  200×3',
      '  gone              0        0         0        0          0          0',
    ]);
    expect(lines.at(-1)).toBe('discards  none');
  });

  it('MarksTheBlockStoppedWhenTheDemoWasStoppedBeforeItSettled', () => {
    expect(renderBlock(midRound({ stopped: true }))[0]).toBe('demo · batch b_2f9c0a1e4d5b6c7d8e9f0a1b2c3d4e5f · InProgress · 14 s · stopped');
  });

  it('FillsTheBarForDoneOfTotalAndOnlyWhenAllAreDone', () => {
    expect(progressBar(0, 40, 10)).toBe('░░░░░░░░░░');
    expect(progressBar(21, 40, 10)).toBe('█████░░░░░');
    expect(progressBar(39, 40, 10)).toBe('█████████░');
    expect(progressBar(40, 40, 10)).toBe('██████████');
    expect(progressBar(0, 0, 10)).toBe('░░░░░░░░░░');
  });
});

describe('the demo progress line', () => {
  it('SaysTheRoundDeliveriesMailAndDiscardsInOneShortLine', () => {
    expect(renderLine(midRound())).toBe('[ 14 s] round 1/3 21/40 done · webhooks 120 ok, 5 pending, 5 discarded · mail 2 · discards 5');
  });

  it('NamesTheBatchStatusOnceTheBatchIsFinalised', () => {
    const line = renderLine(midRound({ elapsedMs: 63_000, status: 'Finalised', round: 3, roundContacts: { done: 7, total: 7 } }));
    expect(line).toBe('[ 63 s] round 3/3 finalised · webhooks 120 ok, 5 pending, 5 discarded · mail 2 · discards 5');
  });

  it('FitsInOneHundredColumnsWithThreeDigitCounts', () => {
    // The demo's 40 contacts make some 230 deliveries: three digits, with room to spare.
    const large = midRound({
      elapsedMs: 599_000,
      roundContacts: { done: 40, total: 40 },
      endpoints: ['healthy', 'flaky', 'throttled', 'gone'].map((name) => ({ name, byState: { completed: 240, snoozed: 240, discarded: 240 }, answers: {} })),
      mail: { sent: 99, snoozed: 9, dropped: 9 },
      discards: { 'webhook.deliver': { gone: 1, endpoint_disabled: 959 }, 'owner.notify': { exhausted: 9 } },
    });
    expect(renderLine(large)).toBe('[599 s] round 1/3 40/40 done · webhooks 960 ok, 960 pending, 960 discarded · mail 99 · discards 969');
    expect(renderLine(large).length).toBeLessThanOrEqual(100);
  });
});

describe('the contacts of a round', () => {
  const contact = (status: string, attempts: number) => ({ status, attempts });

  it('CountsEveryContactInTheFirstRoundAndThoseDialledAndNoLongerCallingAsDone', () => {
    const contacts = [contact('Queued', 0), contact('Calling', 1), contact('Completed', 1), contact('Completed', 1)];
    expect(roundContacts(1, contacts)).toEqual({ done: 2, total: 4 });
  });

  it('LeavesOutContactsCompletedInAnEarlierRoundAndCountsThosePromotedAndWaitingAsNotDone', () => {
    const contacts = [
      contact('Completed', 1), // terminal in round 1
      contact('RetryEligible', 1), // promoted, not yet dialled in round 2
      contact('Calling', 2),
      contact('Completed', 2),
      contact('Completed', 2),
    ];
    expect(roundContacts(2, contacts)).toEqual({ done: 2, total: 4 });
  });

  it('CountsAContactPromotedWhileItsRoundIsFinalisedAsDoneWithThatRound', () => {
    // The finaliser promotes contacts before it moves the batch to the next round.
    expect(roundContacts(1, [contact('RetryEligible', 1), contact('Completed', 1)])).toEqual({ done: 2, total: 2 });
  });
});

describe('the progress view where stdout is not a terminal', () => {
  const at = (seconds: number, done: number) => midRound({ elapsedMs: seconds * 1000, roundContacts: { done, total: 40 } });

  it('PrintsWhatChangedAtMostOnceEveryFewSecondsAndTheLastChangeAtTheEnd', () => {
    const printed: string[] = [];
    const view = lineView((line) => printed.push(line), 5000);
    view.update(at(0, 0));
    view.update(at(1, 1)); // changed, but too soon
    view.update(at(5, 1)); // five seconds on: printed
    view.update(at(11, 1)); // unchanged: not printed
    view.update(at(12, 2)); // changed, seven seconds after the last line
    view.update(at(13, 3)); // too soon
    view.finish(at(14, 4)); // the end is printed at once
    view.update(at(30, 5));
    expect(printed.map((line) => line.slice(0, 28))).toEqual([
      '[  0 s] round 1/3 0/40 done ',
      '[  5 s] round 1/3 1/40 done ',
      '[ 12 s] round 1/3 2/40 done ',
      '[ 14 s] round 1/3 4/40 done ',
    ]);
  });

  it('PrintsNothingMoreOnceStopped', () => {
    const printed: string[] = [];
    const view = lineView((line) => printed.push(line), 5000);
    view.update(at(0, 0));
    view.stop();
    view.update(at(10, 1));
    view.finish(at(11, 2));
    expect(printed).toHaveLength(1);
  });
});

describe('the progress view in a terminal', () => {
  /** A terminal emulator's screen fed what the view writes; a tty turns \n into \r\n, so convertEol. */
  function terminal(cols = 100, rows = 40) {
    const term = new xterm.Terminal({ cols, rows, convertEol: true, allowProposedApi: true });
    let written = Promise.resolve();
    // log-update reads only write, isTTY, columns and rows.
    const stream = {
      isTTY: true,
      columns: cols,
      rows,
      write(chunk: string) {
        written = written.then(() => new Promise<void>((resolve) => term.write(chunk, resolve)));
        return true;
      },
    } as unknown as NodeJS.WritableStream & { isTTY: boolean; columns: number; rows: number };
    const screen = async () => {
      await written;
      const buffer = term.buffer.active;
      const lines: string[] = [];
      for (let i = 0; i < buffer.length; i++) lines.push(buffer.getLine(i)!.translateToString(true));
      while (lines.length > 0 && lines.at(-1) === '') lines.pop();
      return lines;
    };
    return { stream, screen };
  }

  it('UpdatesOneBlockInPlaceBelowWhatWasPrintedBefore', async () => {
    const { stream, screen } = terminal();
    stream.write('demo: POST /v1/batches → b_2f9c… (40 contacts, 3 rounds at most)\n');
    const view = blockView(stream);
    view.update(midRound({ elapsedMs: 1000, roundContacts: { done: 0, total: 40 }, contactsByCode: {} }));
    view.update(midRound({ elapsedMs: 2000, roundContacts: { done: 10, total: 40 } }));
    view.update(midRound());
    expect(await screen()).toEqual(['demo: POST /v1/batches → b_2f9c… (40 contacts, 3 rounds at most)', ...renderBlock(midRound())]);
  });

  it('LeavesTheLastFrameWholeAndMarkedStoppedWhenStoppedAndWhatIsPrintedNextBelowIt', async () => {
    const { stream, screen } = terminal();
    const view = blockView(stream);
    view.update(midRound({ elapsedMs: 1000, contactsByCode: { COMPLETED: 1 } }));
    view.update(midRound());
    view.stop();
    view.update(midRound({ elapsedMs: 30_000 })); // a poll that was in flight when Ctrl-C came
    stream.write('\nSIGINT: stopping…\n');
    expect(await screen()).toEqual([...renderBlock(midRound({ stopped: true })), '', 'SIGINT: stopping…']);
  });

  it('LeavesTheFinalFrameAboveTheSummaryWhenTheDemoSettles', async () => {
    const { stream, screen } = terminal();
    const view = blockView(stream);
    view.update(midRound());
    const final = midRound({ elapsedMs: 63_000, status: 'Finalised', round: 3, roundContacts: { done: 7, total: 7 } });
    view.finish(final);
    stream.write('\ndemo summary\n');
    expect(await screen()).toEqual([...renderBlock(final), '', 'demo summary']);
  });
});
