import { describe, expect, it } from 'vitest';
import { S3UploadStore } from '../../../functions/calls/imports/s3-uploads.ts';
import { uploadIds, uploadKey } from '../../../functions/calls/imports/uploads.ts';
import { s3Client } from '../../../functions/platform/aws.ts';

// Presigning is local (no request is sent): what a client will PUT to, checked as it comes out.
describe('S3 uploads: the presigned PUT', () => {
  const now = Date.parse('2026-12-03T12:00:00Z');
  const store = new S3UploadStore(s3Client({ region: 'eu-west-1', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'not-a-secret' } }), 'redial-uploads', { now: () => now });
  const uploadId = uploadIds.make('acme', '0123456789abcdef0123456789abcdef');

  it('NamesTheTenantsKeyAndExpiresWhenTheUploadDoes', async () => {
    const url = new URL(await store.uploadUrl(uploadKey(uploadId), now + 15 * 60_000));
    expect(url.host).toBe('redial-uploads.s3.eu-west-1.amazonaws.com');
    expect(url.pathname).toBe('/acme/0123456789abcdef0123456789abcdef.csv');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.searchParams.get('X-Amz-Date')).toBe('20261203T120000Z');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    expect(url.searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('SignsNoChecksumTheClientsBytesCouldNotMatch', async () => {
    // The SDK's default signs the CRC32 of an empty body into the URL; S3 would refuse every real file.
    const url = new URL(await store.uploadUrl(uploadKey(uploadId), now + 60_000));
    expect([...url.searchParams.keys()].filter((k) => k.toLowerCase().includes('checksum'))).toEqual([]);
  });
});
