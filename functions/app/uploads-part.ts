import * as z from 'zod';
import { s3Client } from '../platform/aws.ts';
import { parseConfig } from '../platform/config.ts';
import { S3UploadStore } from '../calls/imports/s3-uploads.ts';
import type { LambdaHost } from './aws.ts';
import type { SystemHost } from './host.ts';

/** The uploads bucket's name: lib/ sets it only on the functions that serve the upload and import routes. */
const uploadsEnv = z.object({ UPLOADS_BUCKET: z.string().min(1).optional() });

/**
 * The contacts uploads' store (S3), where lib/ gave this function the bucket: the tenant API and the
 * operator API. A part of its own, so only their bundles hold the S3 client and its presigner.
 */
export const withUploads = ({ host, tracing }: LambdaHost): Pick<SystemHost, 'uploads'> => {
  const { UPLOADS_BUCKET } = parseConfig(uploadsEnv);
  return UPLOADS_BUCKET ? { uploads: new S3UploadStore(s3Client({ capture: (client) => tracing.capture(client) }), UPLOADS_BUCKET, host.clock) } : {};
};
