import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import type { SimClock } from '../clock.ts';
import type { FaultInjector } from '../faults.ts';

/**
 * The mail server, as the simulation's world: a real SMTP server (smtp-server) on 127.0.0.1 that keeps
 * every message it accepts with the headers the invariants read (Message-ID, X-Redial-Event-Id,
 * X-Redial-Kind, To) and the simulation time it arrived. The plan's SMTP faults answer the end of a DATA
 * with 451 (try later) or 550 (refused), or take the message and drop the connection without answering
 * (the sender cannot know it arrived).
 */

export interface ReceivedMail {
  messageId: string;
  eventId: string;
  kind: string;
  to: string;
  /** Clock ms. */
  at: number;
  /** The text with quoted-printable soft breaks and escapes undone, enough to find links in. */
  text: string;
  /** Accepted with a reply, or kept while the connection was dropped (the sender saw a failure). */
  answered: boolean;
  /** The runs that were sending this Message-ID when it arrived. */
  runs: number[];
}

const header = (raw: string, name: string): string => {
  const match = new RegExp(`^${name}:[ \\t]*(.*(?:\\r?\\n[ \\t].*)*)`, 'im').exec(raw);
  return match ? match[1]!.replace(/\r?\n[ \t]+/g, ' ').trim() : '';
};

const unQuote = (raw: string): string => raw.replace(/=\r?\n/g, '').replace(/=3D/gi, '=');

/** One DATA that reached its end: which message, which runs were sending it, and the reply. */
export interface DataReceived {
  messageId: string;
  runs: number[];
  reply: 'accepted' | 'transient' | 'rejected' | 'dropped';
}

export class SimSmtp {
  readonly mails: ReceivedMail[] = [];
  /** Every DATA, whatever was answered. */
  readonly datas: DataReceived[] = [];
  /** DATA commands that reached their end, accepted or not. */
  dataCount = 0;
  url = '';
  healed = false;
  private server: SMTPServer | undefined;
  private readonly sockets = new Map<string, Socket>();
  private readonly options: { clock: SimClock; faults: FaultInjector; onMail: (mail: ReceivedMail) => void };

  constructor(options: SimSmtp['options']) {
    this.options = options;
  }

  async start(): Promise<void> {
    const server = new SMTPServer({
      secure: false,
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      banner: 'redial simulation',
      onConnect: (session: SMTPServerSession, callback: (err?: Error | null) => void) => {
        callback(null);
        void session;
      },
      onData: (stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null) => void) => this.onData(stream, session, callback),
    });
    server.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    // The sockets, by their remote port: a dropped connection is a socket destroyed mid-reply.
    server.server.on('connection', (socket: Socket) => {
      const key = String(socket.remotePort);
      this.sockets.set(key, socket);
      socket.once('close', () => this.sockets.delete(key));
    });
    this.server = server;
    this.url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets.values()) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null) => void): void {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      this.dataCount++;
      const raw = Buffer.concat(chunks).toString('utf8');
      const mail: ReceivedMail = {
        messageId: header(raw, 'Message-ID'),
        eventId: header(raw, 'X-Redial-Event-Id'),
        kind: header(raw, 'X-Redial-Kind'),
        to: session.envelope.rcptTo.map((r) => r.address).join(','),
        at: this.options.clock.now(),
        text: unQuote(raw),
        answered: true,
        runs: [],
      };
      mail.runs = this.options.faults.mailSendersOf(mail.messageId);
      const data: DataReceived = { messageId: mail.messageId, runs: mail.runs, reply: 'accepted' };
      this.datas.push(data);
      const fault = this.healed
        ? undefined
        : this.options.faults.take(['smtp.transient', 'smtp.reject', 'smtp.dropAfterData'], () => true, () => `${mail.kind} ${mail.messageId} to ${mail.to}`);
      switch (fault?.kind) {
        case 'smtp.transient':
          data.reply = 'transient';
          callback(Object.assign(new Error('4.3.0 try again later'), { responseCode: 451 }));
          return;
        case 'smtp.reject':
          data.reply = 'rejected';
          callback(Object.assign(new Error('5.7.1 message refused'), { responseCode: 550 }));
          return;
        case 'smtp.dropAfterData': {
          // Taken, and the connection dropped before the reply: the sender cannot tell it arrived.
          mail.answered = false;
          data.reply = 'dropped';
          this.mails.push(mail);
          this.options.onMail(mail);
          const socket = this.sockets.get(String(session.remotePort));
          if (socket) socket.destroy();
          else callback(Object.assign(new Error('4.4.2 connection dropped'), { responseCode: 421 }));
          return;
        }
        case undefined:
          this.mails.push(mail);
          this.options.onMail(mail);
          callback(null);
      }
    });
  }
}
