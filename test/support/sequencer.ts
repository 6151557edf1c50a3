import { BaseSequencer } from 'vitest/node';
import type { TestSpecification } from 'vitest/node';

/**
 * The files that each run 20 s or more (an idle 2-core machine), longest first. Vitest orders files by
 * their last run's duration, kept under node_modules/.vite; a fresh checkout (CI) has none, and it falls
 * back to file size, which put the longest file (the planted bugs, 5.8 KB) 76th of 134 and left the
 * other worker idle at the end. These start first wherever the order comes from; a slow file missing
 * here only costs time, never a result.
 */
export const LONG_FILES = [
  'test/sim/bugs.test.ts',
  'test/e2e/demo.test.ts',
  'test/infra/iam.test.ts',
  'test/panel/panel.test.ts',
  'test/e2e/webhooks-scaled.test.ts',
  'test/panel/remote-panel.test.ts',
  'test/infra/bundles.test.ts',
  'test/local/restart.test.ts',
  'test/e2e/local-runtime.test.ts',
  'test/e2e/calls-local.test.ts',
  'test/sim/seeds.test.ts',
] as const;

const rank = (spec: TestSpecification): number => {
  const i = LONG_FILES.findIndex((path) => spec.moduleId.endsWith(path));
  return i < 0 ? LONG_FILES.length : i;
};

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // A stable sort: the rest keep Vitest's order (last durations, or size).
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
