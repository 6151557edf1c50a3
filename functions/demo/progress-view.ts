import { createLogUpdate } from 'log-update';
import { renderBlock, renderLine } from './progress.ts';
import type { DemoProgress } from './progress.ts';

/** Where the demo shows its progress while it runs. */
export interface ProgressView {
  /** The latest progress (about once a second). */
  update(progress: DemoProgress): void;
  /** The demo settled: its final progress stays on the screen, above the summary. */
  finish(progress: DemoProgress): void;
  /** The demo was stopped (Ctrl-C): what was shown last stays, marked stopped; later calls do nothing. */
  stop(): void;
  /** A line of what the demo did (it paused its batch, …), printed above the progress, which stays. */
  note(line: string): void;
}

/** A terminal (stdout is a TTY) gets one block updated in place; anything else a short line every few seconds. */
export function progressView(stream: NodeJS.WriteStream, options: { lineEveryMs?: number } = {}): ProgressView {
  return stream.isTTY ? blockView(stream) : lineView((line) => stream.write(`${line}\n`), options.lineEveryMs);
}

/**
 * The block of progress.ts, redrawn in place by log-update (which erases and rewrites only the lines that
 * changed, and hides the cursor meanwhile). Finishing or stopping leaves the last frame as ordinary output.
 */
export function blockView(stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number }): ProgressView {
  const render = createLogUpdate(stream);
  let last: DemoProgress | undefined;
  let closed = false;
  const close = (final: DemoProgress | undefined) => {
    if (closed) return;
    closed = true;
    if (final) render(renderBlock(final).join('\n'));
    render.done();
  };
  return {
    update(progress) {
      if (closed) return;
      last = progress;
      render(renderBlock(progress).join('\n'));
    },
    finish: (progress) => close(progress),
    stop: () => close(last && { ...last, stopped: true }),
    note(line) {
      if (closed) return void stream.write(`${line}\n`);
      // The block is erased, the line written where it was, and the block drawn again below it.
      render.clear();
      stream.write(`${line}\n`);
      if (last) render(renderBlock(last).join('\n'));
    },
  };
}

/**
 * The line of progress.ts, printed when it says something new and at most once every `everyMs` (what a
 * log file or CI keeps), and once more at the end if the last change was not printed yet.
 */
export function lineView(print: (line: string) => void, everyMs = 5000): ProgressView {
  let printed: { at: number; said: string } | undefined;
  let closed = false;
  // What a line says, apart from the time it was printed at.
  const says = (progress: DemoProgress) => renderLine({ ...progress, elapsedMs: 0 });
  const show = (progress: DemoProgress, force: boolean) => {
    const said = says(progress);
    if (printed?.said === said) return;
    if (!force && printed && progress.elapsedMs - printed.at < everyMs) return;
    print(renderLine(progress));
    printed = { at: progress.elapsedMs, said };
  };
  return {
    update(progress) {
      if (!closed) show(progress, false);
    },
    finish(progress) {
      if (!closed) show(progress, true);
      closed = true;
    },
    stop() {
      closed = true;
    },
    note: print,
  };
}
