import { defineConfig } from 'vitest/config';
import LongFirstSequencer from './test/support/sequencer.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // One process per worker, reused across files: no file depends on a fresh module graph (no vi.mock,
    // no fake timers; spies are on a test's own objects or restored after it), and each file saves a spawn and its imports.
    isolate: false,
    maxWorkers: 2,
    // The longest files first, also on a fresh checkout with no durations cached (test/support/sequencer.ts).
    sequence: { sequencer: LongFirstSequencer },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    // Powertools logs are noise in test output; a test that cares about logging sets its own level.
    env: { LOG_LEVEL: 'SILENT' },
  },
});
