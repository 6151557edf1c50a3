import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Clock } from '../../platform/clock.ts';
import type { UploadedFile, UploadStore } from './uploads.ts';

/**
 * Uploads in S3 (lib/ makes the bucket: private, SSL only, objects expire after UPLOAD_RETENTION_DAYS). The
 * upload URL is a presigned PUT signed with the function's own role, which may only put and read objects of
 * this bucket; the client built for it sends every request once (functions/platform/aws.ts `s3Client`).
 * Imported only by the entry points that serve the upload and import routes, so no other bundle holds
 * the S3 SDK.
 */
export class S3UploadStore implements UploadStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly clock: Clock;

  constructor(client: S3Client, bucket: string, clock: Clock) {
    this.client = client;
    this.bucket = bucket;
    this.clock = clock;
  }

  uploadUrl(key: string, expiresAt: number): Promise<string> {
    const expiresIn = Math.max(1, Math.ceil((expiresAt - this.clock.now()) / 1000));
    return getSignedUrl(this.client, new PutObjectCommand({ Bucket: this.bucket, Key: key }), { expiresIn, signingDate: new Date(this.clock.now()) });
  }

  async open(key: string): Promise<UploadedFile | undefined> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (!object.Body) return undefined;
      return { size: object.ContentLength ?? 0, body: object.Body as AsyncIterable<Uint8Array> };
    } catch (error) {
      if (error instanceof Error && (error.name === 'NoSuchKey' || error.name === 'NotFound')) return undefined;
      throw error;
    }
  }
}
