import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LONG_FILES } from '../support/sequencer.ts';

describe('the suite starts its longest files first', () => {
  // A renamed or removed file would silently drop out of the list and run last again on a fresh checkout.
  it('NamesOnlyTestFilesThatExist', () => {
    const root = resolve(import.meta.dirname, '../..');
    expect(LONG_FILES.filter((path) => !existsSync(resolve(root, path)))).toEqual([]);
    expect(LONG_FILES.every((path) => path.endsWith('.test.ts'))).toBe(true);
  });
});
