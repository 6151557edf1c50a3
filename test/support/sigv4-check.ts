import { createHash, timingSafeEqual } from 'node:crypto';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import type { ApiHandler } from '../../functions/platform/local/http-server.ts';

/**
 * API Gateway's IAM check, for a test of the local API: a request to an IAM route is served only if its
 * SigV4 signature is the one the known credentials give. The signature is recomputed with
 * @smithy/signature-v4 from what arrived — method, path, query, the headers the signature names, the
 * body's own SHA-256 and the signing time — and compared with the one sent, so a wrong secret, another
 * region, a changed body or query, or a stale time is refused (403, as API Gateway answers).
 */
export interface SigV4CheckOptions {
  credentials: { accessKeyId: string; secretAccessKey: string };
  region: string;
  /** @default 'execute-api' */
  service?: string;
  /** Routes served without a signature (the public ones: `GET /healthz`, the intake, the mail links), as `METHOD /path/{param}`. */
  publicRoutes: readonly string[];
  /** The verifier's clock, epoch ms. @default Date.now */
  now?: () => number;
}

/** What the check saw: requests it verified, and each it refused with why. */
export interface SigV4CheckLog {
  verified: string[];
  refused: string[];
}

/** API Gateway refuses a signature older or newer than this. */
const MAX_SKEW_MS = 5 * 60_000;

const AUTHORIZATION = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

/** `20260105T090000Z` → epoch ms. */
const amzDate = (text: string): number => Date.parse(`${text.slice(0, 4)}-${text.slice(4, 6)}-${text.slice(6, 8)}T${text.slice(9, 11)}:${text.slice(11, 13)}:${text.slice(13, 15)}Z`);

const patternOf = (route: string) => {
  const [method, path] = route.split(' ') as [string, string];
  return { method, regex: new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`) };
};

/** A SigV4 check in front of a local API handler: `wrap` it around the handler, read `log` after. */
export function sigV4Check(options: SigV4CheckOptions): { wrap: (handler: ApiHandler) => ApiHandler; log: SigV4CheckLog } {
  const service = options.service ?? 'execute-api';
  const now = options.now ?? Date.now;
  const signer = new SignatureV4({ service, region: options.region, credentials: options.credentials, sha256: Sha256 });
  const publicRoutes = options.publicRoutes.map(patternOf);
  const log: SigV4CheckLog = { verified: [], refused: [] };

  async function why(event: Parameters<ApiHandler>[0]): Promise<string | undefined> {
    const headers = event.headers as Record<string, string>;
    const match = AUTHORIZATION.exec(headers['authorization'] ?? '');
    if (!match) return 'missing or malformed Authorization';
    const [, accessKeyId, day, region, signedService, signedHeaders, signature] = match as unknown as string[];
    if (accessKeyId !== options.credentials.accessKeyId) return `unknown access key ${accessKeyId}`;
    if (region !== options.region || signedService !== service) return `signed for ${region}/${signedService}`;
    const date = headers['x-amz-date'] ?? '';
    const signedAt = amzDate(date);
    if (Number.isNaN(signedAt) || date.slice(0, 8) !== day) return 'bad x-amz-date';
    if (Math.abs(now() - signedAt) > MAX_SKEW_MS) return 'signature expired';
    const body = event.body ?? '';
    const declared = headers['x-amz-content-sha256'];
    if (declared !== undefined && declared !== createHash('sha256').update(body).digest('hex')) return 'x-amz-content-sha256 is not the body’s';
    // The request again as the client signed it: the headers its signature names, less the two the signer sets itself.
    const names = signedHeaders!.split(';');
    if (!names.includes('host')) return 'host is not signed';
    const resigned = await signer.sign(
      {
        method: event.requestContext.http.method,
        protocol: 'http:',
        hostname: (headers['host'] ?? '').split(':')[0]!,
        path: event.rawPath,
        query: Object.fromEntries(new URLSearchParams(event.rawQueryString)),
        headers: Object.fromEntries(names.filter((n) => n !== 'x-amz-date' && n !== 'x-amz-content-sha256').map((n) => [n, headers[n] ?? ''])),
        ...(event.body !== undefined ? { body } : {}),
      },
      { signingDate: new Date(signedAt) },
    );
    const expected = /Signature=([0-9a-f]{64})$/.exec(resigned.headers['authorization'] ?? '')?.[1] ?? '';
    const same = expected.length === signature!.length && timingSafeEqual(Buffer.from(expected), Buffer.from(signature!));
    return same ? undefined : 'the signature does not match';
  }

  const wrap =
    (handler: ApiHandler): ApiHandler =>
    async (event, context) => {
      const method = event.requestContext.http.method;
      const path = event.rawPath;
      const isPublic = !path.startsWith('/v1/') || publicRoutes.some((r) => r.method === method && r.regex.test(path));
      if (isPublic) return handler(event, context);
      const refusal = await why(event);
      if (refusal) {
        log.refused.push(`${method} ${path}: ${refusal}`);
        return { statusCode: 403, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: `Forbidden: ${refusal}` }) };
      }
      log.verified.push(`${method} ${path}`);
      return handler(event, context);
    };
  return { wrap, log };
}
