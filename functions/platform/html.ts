const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * HTML-escapes text for element content and double-quoted attributes: the one escaper behind the mails'
 * HTML parts, the mail links' pages and the panel.
 *
 * @example
 * `<td>${escapeHtml(job.lastError)}</td>`
 */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
