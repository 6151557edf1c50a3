import * as z from 'zod';
import { escapeHtml } from '../platform/html.ts';

/**
 * The mail templates: pure functions from data to a subject, a plain-text body and an HTML body. Every
 * value that reaches the HTML is escaped; every value that reaches the subject loses its control characters.
 */
export interface Rendered {
  subject: string;
  text: string;
  html: string;
}

/**
 * What the calls pipeline puts in owner.notify's `data` for `batch.finalised` (its `finalSummary`, the
 * batch.finalised event's data): the batch, its rounds, and its contacts per normalised code. Extra keys
 * are ignored.
 */
export const batchFinalisedData = z.object({
  batchId: z.string().min(1).max(200),
  /** Rounds used. */
  rounds: z.number().int().min(0).optional(),
  maxAttempts: z.number().int().min(1).optional(),
  /** Contacts in the batch (the sum of `byCode` when absent). */
  contacts: z.number().int().min(0).optional(),
  byCode: z.record(z.string(), z.number().int().min(0)),
  byStatus: z.record(z.string(), z.number().int().min(0)).optional(),
  finalisedAt: z.string().optional(),
});
export type BatchFinalisedData = z.infer<typeof batchFinalisedData>;

/** What the webhooks context puts in owner.notify's `data` for `endpoint.disabled` (functions/webhooks/notices.ts). */
export const endpointDisabledData = z.object({
  endpointId: z.string().min(1).max(200),
  url: z.string().min(1).max(2048),
  /** `gone` (it answered 410) or `failing` (it failed for 5 days). */
  reason: z.string().min(1).max(40),
  disabledAt: z.string().min(1).max(40),
});
export type EndpointDisabledData = z.infer<typeof endpointDisabledData>;

/**
 * The owner.notify templates, by name (the kind's `template` argument). `burstCapped`: whether the
 * owner-notify burst cap (5 per owner per hour) applies; an endpoint's disabling is rare and needs the
 * owner's action, so it is exempt (the per-recipient cap still applies: a snooze, never a drop).
 */
export const notifyTemplates = {
  'batch.finalised': { data: batchFinalisedData, render: renderBatchFinalised, burstCapped: true },
  'endpoint.disabled': { data: endpointDisabledData, render: renderEndpointDisabled, burstCapped: false },
} as const;
export type NotifyTemplate = keyof typeof notifyTemplates;

/** A subject line: one line, no control characters, at most 200 characters. */
const subjectLine = (value: string): string => {
  // eslint-disable-next-line no-control-regex
  const line = value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
};

const page = (title: string, body: string): string =>
  `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body style="font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; color: #1f2328; line-height: 1.5;">
${body}
<p style="color: #656d76; font-size: 12px;">Sent by redial. This is an automated message; replies are not read.</p>
</body></html>
`;

const button = (href: string, label: string, color: string): string =>
  `<a href="${escapeHtml(href)}" style="display: inline-block; padding: 8px 16px; margin-right: 8px; background: ${color}; color: #ffffff; text-decoration: none; border-radius: 6px;">${escapeHtml(label)}</a>`;

/** owner.notify / batch.finalised: the batch's outcome, by normalised code, most frequent first. */
export function renderBatchFinalised(tenantId: string, data: BatchFinalisedData): Rendered {
  const rows = Object.entries(data.byCode).sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
  const total = data.contacts ?? rows.reduce((sum, [, n]) => sum + n, 0);
  const rounds = data.rounds !== undefined ? ` after ${data.rounds} round${data.rounds === 1 ? '' : 's'}` : '';
  const budget = data.rounds !== undefined && data.maxAttempts !== undefined ? ` of ${data.maxAttempts}` : '';
  const contacts = `${total} contact${total === 1 ? '' : 's'}`;
  const width = Math.max(4, ...rows.map(([code]) => code.length));
  const table = rows.length ? rows.map(([code, n]) => `  ${code.padEnd(width)}  ${n}`).join('\n') : '  (no outcomes)';
  const text = `Batch ${data.batchId} of tenant ${tenantId} is finalised${rounds}${budget}.

${contacts}, by outcome:
${table}
${data.finalisedAt ? `\nFinalised at ${data.finalisedAt}.\n` : ''}
This is an automated message from redial; replies are not read.
`;
  const htmlRows = rows
    .map(([code, n]) => `<tr><td style="padding: 2px 12px 2px 0;"><code>${escapeHtml(code)}</code></td><td style="text-align: right;">${n}</td></tr>`)
    .join('\n');
  const html = page(
    `Batch ${data.batchId} finalised`,
    `<h2 style="font-size: 18px;">Batch <code>${escapeHtml(data.batchId)}</code> is finalised</h2>
<p>Tenant <code>${escapeHtml(tenantId)}</code>${escapeHtml(rounds)}${escapeHtml(budget)}: ${contacts}, by outcome:</p>
<table style="border-collapse: collapse;">
${htmlRows || '<tr><td>(no outcomes)</td></tr>'}
</table>${data.finalisedAt ? `\n<p>Finalised at ${escapeHtml(data.finalisedAt)}.</p>` : ''}`,
  );
  return { subject: subjectLine(`Batch ${data.batchId} finalised: ${contacts}`), text, html };
}

/** owner.notify / endpoint.disabled: redial stopped delivering to one of the tenant's endpoints, and why. */
export function renderEndpointDisabled(tenantId: string, data: EndpointDisabledData): Rendered {
  const why = data.reason === 'gone' ? 'it answered 410 Gone' : data.reason === 'failing' ? 'every delivery to it failed for 5 days' : data.reason;
  const text = `redial disabled webhook endpoint ${data.endpointId} of tenant ${tenantId} at ${data.disabledAt}: ${why}.

URL: ${data.url}

No event is sent to it until it is enabled again (POST /v1/endpoints/${data.endpointId}/enable, or
\`redial endpoints enable\`); its discarded deliveries can then be sent again (redeliver).

This is an automated message from redial; replies are not read.
`;
  const html = page(
    `Endpoint ${data.endpointId} disabled`,
    `<h2 style="font-size: 18px;">Webhook endpoint <code>${escapeHtml(data.endpointId)}</code> is disabled</h2>
<p>redial disabled it at ${escapeHtml(data.disabledAt)}: ${escapeHtml(why)}.</p>
<p>URL: <code>${escapeHtml(data.url)}</code></p>
<p>No event is sent to it until it is enabled again; its discarded deliveries can then be sent again (redeliver).</p>`,
  );
  return { subject: subjectLine(`Webhook endpoint ${data.endpointId} disabled: ${why}`), text, html };
}

/** owner.email_confirmation: a link that makes `email` the tenant's confirmed owner address. */
export function renderEmailConfirmation(input: { tenantId: string; email: string; link: string; expiresAt: string }): Rendered {
  const text = `Someone set ${input.email} as the owner address of tenant ${input.tenantId} on redial.

To confirm this address, open this link:

${input.link}

The link works once and expires at ${input.expiresAt}. Until the address is confirmed, redial
mails nothing to it. If this was not you, ignore this message.
`;
  const html = page(
    'Confirm your owner address',
    `<h2 style="font-size: 18px;">Confirm your owner address</h2>
<p>Someone set <strong>${escapeHtml(input.email)}</strong> as the owner address of tenant <code>${escapeHtml(input.tenantId)}</code> on redial.</p>
<p>${button(input.link, 'Confirm this address', '#1f883d')}</p>
<p>Or open this link: <a href="${escapeHtml(input.link)}">${escapeHtml(input.link)}</a></p>
<p>The link works once and expires at ${escapeHtml(input.expiresAt)}. If this was not you, ignore this message.</p>`,
  );
  return { subject: subjectLine(`Confirm your owner address for tenant ${input.tenantId}`), text, html };
}

/** access_request.approval_mail: asks the owner to approve or deny someone's access request. */
export function renderAccessRequest(input: {
  tenantId: string;
  requesterEmail: string;
  approveLink: string;
  denyLink: string;
  expiresAt: string;
}): Rendered {
  const text = `${input.requesterEmail} asks for access to tenant ${input.tenantId} on redial.

Approve: ${input.approveLink}

Deny:    ${input.denyLink}

Either link works once, and the first one used decides. They expire at ${input.expiresAt}.
If you do not know this person, deny the request.
`;
  const html = page(
    'Access request',
    `<h2 style="font-size: 18px;">Access request for tenant <code>${escapeHtml(input.tenantId)}</code></h2>
<p><strong>${escapeHtml(input.requesterEmail)}</strong> asks for access to tenant <code>${escapeHtml(input.tenantId)}</code> on redial.</p>
<p>${button(input.approveLink, 'Approve', '#1f883d')}${button(input.denyLink, 'Deny', '#cf222e')}</p>
<p>Approve: <a href="${escapeHtml(input.approveLink)}">${escapeHtml(input.approveLink)}</a><br>
Deny: <a href="${escapeHtml(input.denyLink)}">${escapeHtml(input.denyLink)}</a></p>
<p>Either link works once, and the first one used decides. They expire at ${escapeHtml(input.expiresAt)}. If you do not know this person, deny the request.</p>`,
  );
  return { subject: subjectLine(`Access request for tenant ${input.tenantId} from ${input.requesterEmail}`), text, html };
}
