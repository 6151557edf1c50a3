import * as z from 'zod';
import { notFound, queryInt, route } from '../platform/http.ts';
import type { ApiRoute } from '../platform/http.ts';
import type { SinkMessage, SmtpSink } from '../platform/local/smtp-sink.ts';

const summary = (m: SinkMessage) => ({
  id: m.id,
  receivedAt: m.receivedAt,
  envelope: m.envelope,
  messageId: m.messageId,
  subject: m.subject,
  from: m.from,
  to: m.to,
  date: m.date,
  kind: m.headers['x-redial-kind'] ?? null,
  eventId: m.headers['x-redial-event-id'] ?? null,
  size: m.size,
  text: m.text,
  html: m.html,
});

/**
 * The local runtime's mail routes (not deployed: on AWS mail leaves through SES): every message the SMTP
 * sink accepted, newest first, for the panel and for people following links by hand.
 */
export function mailSinkRoutes(sink: SmtpSink): ApiRoute[] {
  const list = route({
    method: 'GET',
    path: '/v1/ops/mail',
    auth: 'iam',
    summary: 'Messages the local SMTP sink accepted, newest first (local runtime only)',
    query: z.object({
      to: z.string().max(320).optional(),
      messageId: z.string().max(400).optional(),
      limit: queryInt(1, 500).optional(),
    }),
    handler: async ({ query }) => {
      const to = query.to?.toLowerCase();
      const messages = sink
        .messages()
        .reverse()
        .filter((m) => !to || m.envelope.to.some((address) => address.toLowerCase() === to))
        .filter((m) => !query.messageId || m.messageId === query.messageId)
        .slice(0, query.limit ?? 50);
      return { status: 200, body: { smtp: sink.url, total: sink.messages().length, messages: messages.map(summary) } };
    },
  });
  const raw = route({
    method: 'GET',
    path: '/v1/ops/mail/{id}/raw',
    auth: 'iam',
    summary: 'One message exactly as the sink received it (local runtime only)',
    params: z.object({ id: z.string().uuid() }),
    handler: async ({ params }) => {
      const message = sink.messages().find((m) => m.id === params.id);
      if (!message) throw notFound(`message ${params.id}`);
      return { status: 200, text: message.raw, headers: { 'content-type': 'message/rfc822' } };
    },
  });
  return [list, raw];
}
