import * as z from 'zod';
import { html } from './html.ts';
import type { Html } from './html.ts';

/** What the panel's listings share: counts by key, the next page's link, the cursor a page is asked with. */

/** `Queued 3, Completed 2`: the non-zero counts of a record, the numbers in bold. */
export const counts = (record: Record<string, number>): Html =>
  html`${Object.entries(record)
    .filter(([, n]) => n > 0)
    .map(([k, n], i) => html`${i ? ', ' : ''}${k} <strong>${n}</strong>`)}`;

/** The next page's link of a listing, when it has one. */
export const nextLink = (path: string, cursor: string | undefined, label = 'Next page') => (cursor ? html`<p><a href="${path}?cursor=${encodeURIComponent(cursor)}">${label}</a></p>` : '');

/** A listing page's query: its cursor (a malformed one is ignored: the first page). */
export const cursorQuery = z.object({ cursor: z.string().max(2000).optional().catch(undefined) });
