import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

export type ApiHandler = (event: APIGatewayProxyEventV2, context: never) => Promise<APIGatewayProxyStructuredResultV2>;

/** The local HTTP server. */
export interface LocalHttpServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** API Gateway's own payload limit; each route checks its smaller cap itself. */
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;

/**
 * Serves an API Gateway (HTTP API, payload 2.0) handler on 127.0.0.1: each request becomes the event API
 * Gateway would send, and the handler's result becomes the response. Only loopback is bound: locally there
 * is no IAM, so nothing else may reach it.
 */
export async function startHttpServer(options: { port: number; handler: ApiHandler; host?: string }): Promise<LocalHttpServer> {
  const host = options.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    void serve(req, res, options.handler);
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function serve(req: IncomingMessage, res: ServerResponse, handler: ApiHandler): Promise<void> {
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) {
        res.writeHead(413, { 'content-type': 'application/json', connection: 'close' });
        res.end(JSON.stringify({ error: 'payload_too_large', message: `request body over ${MAX_REQUEST_BYTES} bytes` }));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    }
    const result = await handler(toEvent(req, Buffer.concat(chunks).toString('utf8')), undefined as never);
    res.writeHead(result.statusCode ?? 200, result.headers as Record<string, string>);
    res.end(result.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : (result.body ?? ''));
  } catch (error) {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'internal', message: error instanceof Error ? error.message : 'internal error' }));
  }
}

function toEvent(req: IncomingMessage, body: string): APIGatewayProxyEventV2 {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const headers: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[key.toLowerCase()] = Array.isArray(value) ? value.join(',') : value;
  }
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = key in query ? `${query[key]},${value}` : value;
  const method = (req.method ?? 'GET').toUpperCase();
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: url.pathname,
    rawQueryString: url.search.slice(1),
    headers,
    ...(Object.keys(query).length ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers['host'] ?? 'localhost',
      domainPrefix: 'local',
      http: { method, path: url.pathname, protocol: `HTTP/${req.httpVersion}`, sourceIp: req.socket.remoteAddress ?? '127.0.0.1', userAgent: headers['user-agent'] ?? '' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: new Date(now).toUTCString(),
      timeEpoch: now,
    },
    ...(body ? { body } : {}),
    isBase64Encoded: false,
  };
}
