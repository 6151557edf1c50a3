import { timingSafeEqual } from 'node:crypto';
import { HttpError } from '../platform/http.ts';
import type { ApiResponse } from '../platform/http.ts';
import { OpsApiError, OpsClientError } from '../cli/api-client.ts';
import { html, raw } from './html.ts';
import type { Html } from './html.ts';

const STYLE = raw(`
  :root { font-family: system-ui, sans-serif; line-height: 1.4; color: #1b1b1b; background: #fff; }
  body { margin: 0; }
  header { background: #17324d; color: #fff; padding: .6rem 1rem; display: flex; gap: 1.5rem; align-items: center; flex-wrap: wrap; }
  header a { color: #fff; }
  header .brand { font-weight: 700; font-size: 1.1rem; text-decoration: none; }
  nav ul { list-style: none; display: flex; gap: 1rem; margin: 0; padding: 0; flex-wrap: wrap; }
  main { padding: 1rem; max-width: 80rem; }
  h1 { overflow-wrap: anywhere; }
  table { border-collapse: collapse; width: 100%; margin: .5rem 0 1.5rem; font-size: .92rem; }
  th, td { border: 1px solid #c9d1d9; padding: .3rem .5rem; text-align: left; vertical-align: top; }
  th { background: #eef2f6; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .state { font-weight: 600; }
  .state-discarded, .bad { color: #a4161a; }
  .state-completed, .good { color: #1b6e20; }
  .state-retryable, .state-snoozed, .warn { color: #8a5a00; }
  code, .mono { font-family: ui-monospace, monospace; font-size: .88em; }
  td.mono { overflow-wrap: anywhere; }
  form.inline { display: inline; }
  button { font: inherit; padding: .2rem .7rem; cursor: pointer; }
  .skip { position: absolute; left: -999px; } .skip:focus { left: 1rem; top: .5rem; background: #fff; color: #000; padding: .3rem; }
  .filters { display: flex; gap: 1rem; align-items: end; flex-wrap: wrap; margin: .5rem 0; }
  .filters label { display: flex; flex-direction: column; font-size: .85rem; }
  .notice { background: #fff7e0; border: 1px solid #e0c068; padding: .5rem .8rem; }
  pre { white-space: pre-wrap; background: #f6f8fa; padding: .6rem; border: 1px solid #d0d7de; }
  .error { background: #fde8e8; border: 1px solid #e0a0a0; padding: .5rem .8rem; }
  figure.chart { margin: .5rem 0 1.5rem; }
  figure.chart svg { max-width: 100%; height: auto; font-size: 11px; }
  figure.chart svg text { fill: #1b1b1b; }
  figcaption { font-size: .85rem; color: #444; }
  ul.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .3rem 1rem; padding: 0; margin: .3rem 0 0; }
  .charts { display: flex; flex-wrap: wrap; gap: 0 2rem; align-items: start; }
  table.breakdown { width: auto; min-width: 18rem; }
  .bulk { border: 1px solid #c9d1d9; padding: .5rem .8rem; margin: .5rem 0 1rem; }
  .bulk form { display: inline; margin-right: .5rem; }
`);

/** A section of the panel, listed in its navigation. */
export interface PanelSection {
  path: string;
  title: string;
}

/** Wraps a page body in the panel's layout: a skip link, the navigation, one h1. */
export function page(title: string, sections: readonly PanelSection[], body: Html, options: { refreshSeconds?: number } = {}): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · redial ops</title>
<style>${STYLE}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
  <a class="brand" href="/panel">redial ops</a>
  <nav aria-label="Panel sections"><ul>${sections.map((s) => html`<li><a href="${s.path}">${s.title}</a></li>`)}</ul></nav>
</header>
<main id="main">
<h1>${title}</h1>
${body}
</main>
${options.refreshSeconds ? html`<script>let leaving = false; addEventListener('beforeunload', () => { leaving = true; }); setTimeout(() => { if (!leaving && !document.querySelector('form:focus-within')) location.reload(); }, ${options.refreshSeconds * 1000});</script>` : ''}
</body>
</html>`.value;
}

/** An HTML answer for a route (never cached: the panel shows live state). */
export const htmlResponse = (body: string, status = 200) => ({
  status,
  text: body,
  headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
});

/** The hidden field every panel form carries: the runtime's per-process form token. */
export const formTokenField = (token: string): Html => html`<input type="hidden" name="form_token" value="${token}">`;

/**
 * Refuses (403) a panel POST whose form does not carry the runtime's form token. A page on another site
 * cannot read the token, so it cannot build a form that passes (beside sameOriginOnly's Origin check).
 */
export function requireFormToken(rawBody: string, token: string): void {
  const given = Buffer.from(new URLSearchParams(rawBody).get('form_token') ?? '');
  const expected = Buffer.from(token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new HttpError(403, 'invalid_form_token', 'this form did not come from this panel; reload the page and press the button again');
  }
}

/** What an error means for a panel page: its status and what the operator is told. */
export function describePanelError(error: unknown): { status: number; message: string } {
  if (error instanceof HttpError) return { status: error.status, message: error.message };
  if (error instanceof OpsApiError) {
    // What the API says of the panel's own request: not found or refused stays so; anything else is the API's failure.
    if ([400, 404, 409].includes(error.status)) return { status: error.status, message: error.message };
    const hint = error.status === 403 ? ' (the API refused the panel’s signed request: check the AWS credentials, the region, and execute-api:Invoke)' : '';
    return { status: 502, message: `the ops API answered ${error.message}${hint}` };
  }
  if (error instanceof OpsClientError) return { status: 502, message: error.message };
  return { status: 500, message: 'internal error' };
}

/**
 * Runs a panel page's handler and turns what it throws into an HTML page with the right status (the API
 * said 404: a 404 page; the API is unreachable or refused the signature: a 502 that says so).
 */
export async function renderErrors(sections: readonly PanelSection[], run: () => Promise<ApiResponse>): Promise<ApiResponse> {
  try {
    return await run();
  } catch (error) {
    const { status, message } = describePanelError(error);
    if (status === 500) throw error;
    return htmlResponse(page(status === 404 ? 'Not found' : 'Something went wrong', sections, html`<p class="error" role="alert">${message}</p>`), status);
  }
}

/** A 303 to another panel page (after a button's POST). */
export const redirect = (location: string): ApiResponse => ({ status: 303, text: '', headers: { location } });
