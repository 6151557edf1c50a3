import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_UPLOAD_BYTES, uploadIds, uploadKey } from '../../../functions/calls/imports/uploads.ts';
import { LocalUploadStore } from '../../../functions/local/uploads.ts';
import { ManualClock } from '../../../functions/platform/clock.ts';

const stores: LocalUploadStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

function store() {
  const clock = new ManualClock(Date.parse('2026-12-03T12:00:00Z'));
  const uploads = new LocalUploadStore(mkdtempSync(join(tmpdir(), 'redial-uploads-test-')), clock);
  stores.push(uploads);
  return { uploads, clock };
}

const key = uploadKey(uploadIds.make('acme', '0123456789abcdef0123456789abcdef'));

async function readAll(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  return Buffer.concat(chunks);
}

describe('local uploads (S3’s place on one machine)', () => {
  it('StoresThePutBytesAsSentAndOpensThemAsAStream', async () => {
    const { uploads, clock } = store();
    expect(await uploads.open(key)).toBeUndefined();
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('number\n+442079460000\n'), Buffer.from([0xff])]);
    const put = await fetch(await uploads.uploadUrl(key, clock.now() + 60_000), { method: 'PUT', body: bytes });
    expect(put.status).toBe(200);
    const file = (await uploads.open(key))!;
    expect(file.size).toBe(bytes.length);
    expect(await readAll(file.body)).toEqual(bytes);
  });

  it('RefusesAFileOverTheLimitAndKeepsNothing', async () => {
    const { uploads, clock } = store();
    const put = await fetch(await uploads.uploadUrl(key, clock.now() + 60_000), { method: 'PUT', body: Buffer.alloc(MAX_UPLOAD_BYTES + 1, 0x41) });
    expect(put.status).toBe(413);
    expect(await uploads.open(key)).toBeUndefined();
  });

  it('RefusesOtherMethodsAndKeysThatAreNotUploadKeys', async () => {
    const { uploads, clock } = store();
    const url = new URL(await uploads.uploadUrl(key, clock.now() + 60_000));
    expect((await fetch(url, { method: 'GET' })).status).toBe(404);
    url.pathname = '/uploads/acme/../../etc/passwd';
    expect((await fetch(url, { method: 'PUT', body: 'x' })).status).toBe(404);
    await expect(uploads.uploadUrl('../x.csv', clock.now())).rejects.toThrow(RangeError);
  });
});
