import { timingSafeEqual } from 'node:crypto';
import { HttpError } from '../platform/http.ts';
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
${options.refreshSeconds ? html`<script>setTimeout(() => { if (!document.querySelector('form:focus-within')) location.reload(); }, ${options.refreshSeconds * 1000});</script>` : ''}
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
