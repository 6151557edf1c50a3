import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server';

/** A message the sink accepted, with the parts the panel shows decoded. */
export interface SinkMessage {
  /** The sink's own id for the message. */
  id: string;
  /** When the sink accepted it (wall clock, ISO). */
  receivedAt: string;
  envelope: { from: string | null; to: string[] };
  messageId: string | null;
  subject: string | null;
  from: string | null;
  to: string | null;
  date: string | null;
  /** Every header, lower-cased names, unfolded (the first value of a repeated header). */
  headers: Record<string, string>;
  text: string | null;
  html: string | null;
  size: number;
  /** The message as received. */
  raw: string;
}

/** What the sink answers at a stage: accept (undefined), or an SMTP reply code and text. */
export interface SinkReply {
  code: number;
  message: string;
}

/** Lets a test script the sink's replies: called for each RCPT TO and at the end of each DATA. */
export type SinkScript = (stage: 'rcpt' | 'data', info: { to: string; attempt: number }) => SinkReply | undefined;

/** A running SMTP sink. */
export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Every accepted message, oldest first. */
  messages(): SinkMessage[];
  /** Resolves when `count` messages have been accepted (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<SinkMessage[]>;
  /** How many DATA commands reached their end, accepted or not (a test's "the server saw it"). */
  dataCount(): number;
  stop(): Promise<void>;
}

/**
 * The local runtime's SMTP sink: a real SMTP server (smtp-server) on 127.0.0.1 that keeps every message
 * it accepts, in memory, for the panel (`GET /v1/ops/mail`). No TLS and no auth: it listens on loopback
 * only and delivers nothing onwards. Tests script its replies (451, 550, …) with `script`.
 */
export async function startSmtpSink(options: { port?: number; host?: string; script?: SinkScript; maxMessageBytes?: number } = {}): Promise<SmtpSink> {
  const host = options.host ?? '127.0.0.1';
  const maxBytes = options.maxMessageBytes ?? 10 * 1024 * 1024;
  const stored: SinkMessage[] = [];
  const waiters: { count: number; resolve: (m: SinkMessage[]) => void }[] = [];
  let dataCount = 0;
  let dataAttempt = 0;
  const rcptAttempts = new Map<string, number>();

  const reply = (stage: 'rcpt' | 'data', to: string, attempt: number): Error | null => {
    const answer = options.script?.(stage, { to, attempt });
    if (!answer) return null;
    return Object.assign(new Error(answer.message), { responseCode: answer.code });
  };

  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    size: maxBytes,
    banner: 'redial SMTP sink',
    onRcptTo(address: SMTPServerAddress, _session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const attempt = (rcptAttempts.get(address.address) ?? 0) + 1;
      rcptAttempts.set(address.address, attempt);
      callback(reply('rcpt', address.address, attempt));
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        dataCount++;
        const to = session.envelope.rcptTo.map((r) => r.address);
        const refused = reply('data', to[0] ?? '', ++dataAttempt);
        if (refused) return callback(refused);
        if (stream.sizeExceeded) return callback(Object.assign(new Error('message too large'), { responseCode: 552 }));
        const raw = Buffer.concat(chunks).toString('utf8');
        const from = session.envelope.mailFrom;
        stored.push(parseMessage(raw, { from: from ? from.address : null, to }));
        for (const waiter of waiters.filter((w) => stored.length >= w.count)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve([...stored]);
        }
        callback(null);
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  server.on('error', () => undefined);
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://${host}:${port}`,
    port,
    messages: () => [...stored],
    dataCount: () => dataCount,
    waitFor: (count, timeoutMs = 10_000) =>
      stored.length >= count
        ? Promise.resolve([...stored])
        : new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`SMTP sink: ${stored.length} of ${count} messages after ${timeoutMs} ms`)), timeoutMs);
            waiters.push({ count, resolve: (m) => (clearTimeout(timer), resolve(m)) });
          }),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// ─── A small MIME reader: enough to show what redial sends (text and HTML alternatives, QP or base64) ───

interface Part {
  headers: Record<string, string>;
  body: string;
}

function splitHeaders(raw: string): Part {
  const normalized = raw.replace(/\r\n/g, '\n');
  const end = normalized.indexOf('\n\n');
  const head = end < 0 ? normalized : normalized.slice(0, end);
  const body = end < 0 ? '' : normalized.slice(end + 2);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] ??= line.slice(colon + 1).trim();
  }
  return { headers, body };
}

function decodeBody(part: Part): string {
  const encoding = (part.headers['content-transfer-encoding'] ?? '7bit').toLowerCase();
  if (encoding === 'base64') return Buffer.from(part.body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(part.body.replace(/=\n/g, ''));
  return part.body;
}

/** `=XX` escapes to bytes, everything else as UTF-8, then the bytes as UTF-8. */
function decodeQuotedPrintable(text: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(text[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Decodes RFC 2047 encoded words (`=?UTF-8?Q?…?=`, `=?UTF-8?B?…?=`) in a header value. */
export function decodeHeader(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g, (_, _charset: string, encoding: string, text: string) => {
      if (encoding.toUpperCase() === 'B') return Buffer.from(text, 'base64').toString('utf8');
      return decodeQuotedPrintable(text.replace(/_/g, ' '));
    });
}

/** The leaf parts of a message, multiparts walked. */
function leaves(part: Part, depth = 0): Part[] {
  const type = part.headers['content-type'] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (!type.toLowerCase().startsWith('multipart/') || !boundary || depth > 5) return [part];
  const sections = part.body.split(`--${boundary}`).slice(1);
  return sections.filter((s) => !s.startsWith('--')).flatMap((s) => leaves(splitHeaders(s.replace(/^\n/, '')), depth + 1));
}

function parseMessage(raw: string, envelope: { from: string | null; to: string[] }): SinkMessage {
  const root = splitHeaders(raw);
  const parts = leaves(root);
  const partOf = (type: string) => parts.find((p) => (p.headers['content-type'] ?? 'text/plain').toLowerCase().startsWith(type));
  const text = partOf('text/plain');
  const html = partOf('text/html');
  const header = (name: string) => (root.headers[name] !== undefined ? decodeHeader(root.headers[name]) : null);
  return {
    id: randomUUID(),
    receivedAt: new Date().toISOString(),
    envelope,
    messageId: header('message-id'),
    subject: header('subject'),
    from: header('from'),
    to: header('to'),
    date: header('date'),
    headers: Object.fromEntries(Object.entries(root.headers).map(([k, v]) => [k, decodeHeader(v)])),
    text: text ? decodeBody(text) : null,
    html: html ? decodeBody(html) : null,
    size: Buffer.byteLength(raw),
    raw,
  };
}
