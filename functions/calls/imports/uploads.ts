import { ownedIds } from '../../platform/tenancy.ts';

/**
 * Where a large contacts file waits between its upload and its import (docs/calls.md, "Importing
 * contacts"): an S3 bucket on AWS (s3-uploads.ts), a folder beside the data locally
 * (functions/local/uploads.ts). The client PUTs the file straight there with a URL the API gives out, so
 * the file never passes through API Gateway's 10 MB limit; the import request then reads it as a stream.
 *
 * Every upload belongs to a tenant: its id names the tenant (`u_<tenantId>.<32 hex>`, like a batch id) and
 * its object key starts with the tenant id, so a tenant route builds the key from its scope and another
 * tenant's upload id names nothing there.
 */

/** The largest file an upload takes (and an import reads). */
export const MAX_UPLOAD_BYTES = 50 * 1024 * 1024;
/** How long an upload URL can be used. */
export const UPLOAD_URL_SECONDS = 15 * 60;
/** How long an uploaded file is kept (the bucket's lifecycle rule; locally, nothing removes it). */
export const UPLOAD_RETENTION_DAYS = 2;

export const uploadIds = ownedIds('u', 'an upload');

/** The object key of an upload: `<tenantId>/<hex>.csv`. */
export function uploadKey(uploadId: string): string {
  const id = uploadIds.parse(uploadId);
  if (!id) throw new RangeError(`not an upload id: ${uploadId}`);
  return `${id.tenantId}/${id.hex}.csv`;
}

/** An uploaded file, opened: its size and its bytes as a stream. */
export interface UploadedFile {
  size: number;
  body: AsyncIterable<Uint8Array>;
}

/** Where uploads go: the URL a client PUTs to, and the file once it is there. */
export interface UploadStore {
  /** A URL that takes one PUT of the file at `key` until `expiresAt` (epoch ms). */
  uploadUrl(key: string, expiresAt: number): Promise<string>;
  /** The file at `key`, or undefined when nothing was uploaded there (or it expired). */
  open(key: string): Promise<UploadedFile | undefined>;
}
