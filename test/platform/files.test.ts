import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../functions/platform/local/files.ts';

describe('writeFileAtomic', () => {
  const dir = mkdtempSync(join(tmpdir(), 'redial-files-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('CreatesTheFolderReplacesTheContentWholeAndLeavesNoTemporaryFileBehind', () => {
    const file = join(dir, 'nested', 'state.json');
    writeFileAtomic(file, '{"a":1}');
    writeFileAtomic(file, '{"a":2}');
    expect(readFileSync(file, 'utf8')).toBe('{"a":2}');
    expect(readdirSync(join(dir, 'nested'))).toEqual(['state.json']);
  });
});
