import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import type { Clock } from '../platform/clock.ts';
import { MAX_UPLOAD_BYTES } from '../calls/imports/uploads.ts';
import type { UploadedFile, UploadStore } from '../calls/imports/uploads.ts';

/** The keys uploads.ts makes (`<tenantId>/<32 hex>.csv`): anything else is refused before it names a path. */
const KEY = /^[A-Za-z0-9_-]{1,64}\/[0-9a-f]{32}\.csv$/;

/**
 * S3's place on one machine: files under a folder (`<data dir>/uploads`), and an HTTP server on 127.0.0.1
 * that takes the PUT an upload URL names — the same shape as a presigned S3 URL: the key in the path, an
 * expiry and an HMAC signature (a key of this process) in the query, one PUT of the raw bytes, 200 when
 * stored. The body is streamed to a temporary file and renamed into place once whole, so an import never
 * reads half a file; past {@link MAX_UPLOAD_BYTES} it is refused (413) and nothing is kept. The server
 * starts with the first upload URL asked for, so a host that never takes an upload opens no port.
 */
export class LocalUploadStore implements UploadStore {
  private readonly dirOf: () => string;
  private dirMade: string | undefined;
  private readonly clock: Clock;
  private readonly secret = randomBytes(32);
  private server: Promise<{ server: Server; url: string }> | undefined;

  /** `dir`: the folder, or how to make it (on first use: a host that never takes an upload makes none). */
  constructor(dir: string | (() => string), clock: Clock) {
    this.dirOf = typeof dir === 'string' ? () => dir : dir;
    this.clock = clock;
  }

  private get dir(): string {
    return (this.dirMade ??= this.dirOf());
  }

  async uploadUrl(key: string, expiresAt: number): Promise<string> {
    if (!KEY.test(key)) throw new RangeError(`not an upload key: ${key}`);
    const { url } = await (this.server ??= this.listen());
    return `${url}/uploads/${key}?expires=${expiresAt}&signature=${this.sign(key, expiresAt)}`;
  }

  async open(key: string): Promise<UploadedFile | undefined> {
    if (!KEY.test(key)) return undefined;
    const file = join(this.dir, key);
    try {
      const { size } = await stat(file);
      return { size, body: createReadStream(file) };
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** Stops the upload server, if it started. */
  async close(): Promise<void> {
    const started = await this.server;
    if (!started) return;
    await new Promise<void>((resolve) => {
      started.server.close(() => resolve());
      started.server.closeAllConnections();
    });
  }

  private sign(key: string, expiresAt: number): string {
    return createHmac('sha256', this.secret).update(`${key}\n${expiresAt}`).digest('base64url');
  }

  private async listen(): Promise<{ server: Server; url: string }> {
    const server = createServer((req, res) => void this.serve(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = (status: number, code: string, message: string) => {
      if (!res.headersSent) res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
      res.end(JSON.stringify({ error: code, message }));
    };
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const key = url.pathname.replace(/^\/uploads\//, '');
    if (req.method !== 'PUT' || !url.pathname.startsWith('/uploads/') || !KEY.test(key)) return answer(404, 'not_found', 'no such upload URL');
    const expiresAt = Number(url.searchParams.get('expires'));
    const given = Buffer.from(url.searchParams.get('signature') ?? '');
    const expected = Buffer.from(this.sign(key, expiresAt));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return answer(403, 'forbidden', 'the upload URL’s signature does not match');
    if (this.clock.now() > expiresAt) return answer(403, 'forbidden', 'the upload URL has expired');
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > MAX_UPLOAD_BYTES) {
      req.resume();
      return answer(413, 'payload_too_large', `at most ${MAX_UPLOAD_BYTES} bytes`);
    }
    const file = join(this.dir, key);
    const partial = `${file}.${randomBytes(6).toString('hex')}.part`;
    await mkdir(dirname(file), { recursive: true });
    let size = 0;
    const cap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        done(size > MAX_UPLOAD_BYTES ? new RangeError('too large') : null, chunk);
      },
    });
    try {
      await pipeline(req, cap, createWriteStream(partial));
      await rename(partial, file);
      answer(200, 'ok', `${size} bytes stored`);
    } catch (error) {
      await rm(partial, { force: true });
      if (error instanceof RangeError) answer(413, 'payload_too_large', `at most ${MAX_UPLOAD_BYTES} bytes`);
      else answer(500, 'internal', 'the upload was not stored');
    }
  }
}

/** The local upload store over `dir`, or over a new temporary folder (a test's host, a bench's). */
export function localUploads(dir: string | undefined, clock: Clock): LocalUploadStore {
  return new LocalUploadStore(dir ?? (() => mkdtempSync(join(tmpdir(), 'redial-uploads-'))), clock);
}
