import MailComposer from 'nodemailer/lib/mail-composer';
import type { Rendered } from './templates.ts';

/**
 * One mail, ready to send: who it goes to, what it says, and the Message-ID that makes a duplicate
 * recognisable. Both transports send the same bytes ({@link composeRaw}), so what the local SMTP sink
 * receives is what SES is handed.
 */
export interface OutgoingMail {
  /** The job kind that sends it (`owner.notify`, …), also in the `X-Redial-Kind` header. */
  kind: string;
  /** The event the mail is about; the Message-ID's left-hand side. */
  eventId: string;
  from: string;
  to: string;
  /** `<eventId@MAIL_DOMAIN>`, angle brackets included. */
  messageId: string;
  /** The Date header, epoch ms (the injected clock's now). */
  date: number;
  content: Rendered;
}

/** A Message-ID's left-hand side: a dot-atom of letters, digits, `_` and `-` (no header can be smuggled in). */
const EVENT_ID = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

/** Whether `eventId` can stand on the left of a Message-ID as it is. */
export const isMessageIdSafe = (eventId: string): boolean => eventId.length <= 200 && EVENT_ID.test(eventId);

/**
 * The Message-ID of the mail about `eventId`: `<eventId@domain>`. The same event always gets the same
 * Message-ID, so a duplicate sent after a crash between send and mark is one message to most mailboxes.
 *
 * @example
 * messageIdFor('evt_3f2a', 'mail.example.com'); // '<evt_3f2a@mail.example.com>'
 */
export function messageIdFor(eventId: string, domain: string): string {
  if (!isMessageIdSafe(eventId)) throw new RangeError(`event id ${JSON.stringify(eventId)} cannot be used in a Message-ID`);
  return `<${eventId}@${domain}>`;
}

/** The RFC 5322 message: headers, a text/plain and a text/html alternative, CRLF line ends. */
export async function composeRaw(mail: OutgoingMail): Promise<Buffer> {
  const composer = new MailComposer({
    from: mail.from,
    to: mail.to,
    subject: mail.content.subject,
    messageId: mail.messageId,
    date: new Date(mail.date),
    text: mail.content.text,
    html: mail.content.html,
    headers: {
      // RFC 3834: an automatic message; auto-responders should not answer it.
      'Auto-Submitted': 'auto-generated',
      'X-Redial-Kind': mail.kind,
      'X-Redial-Event-Id': mail.eventId,
    },
    newline: 'win',
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}
