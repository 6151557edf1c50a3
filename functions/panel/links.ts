import { html } from './html.ts';
import type { Html } from './html.ts';

/**
 * A link to a call's artefact (a recording, a transcript), as the panel shows it: the URL is the AI call
 * handler's, so only an `https:` URL becomes a link (never `javascript:`, `data:` or plain http), opened
 * in a new tab that gets no handle on the panel (`rel="noopener noreferrer"`) and no Referer naming the
 * panel's page. Anything else is shown as text, escaped, for the operator to see; absent, nothing.
 *
 * @example
 * artefactLink('https://rec.example/1.mp3', 'recording'); // <a href="https://rec.example/1.mp3" rel="noopener noreferrer" target="_blank">recording</a>
 */
export function artefactLink(url: string | null | undefined, label: string): Html {
  if (!url) return html``;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed?.protocol !== 'https:') return html`<span class="mono" title="not an https URL: not linked">${url}</span>`;
  return html`<a href="${parsed.href}" rel="noopener noreferrer" target="_blank">${label}</a>`;
}
