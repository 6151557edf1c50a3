/**
 * The jobs listing's filter, as a form gives it: state, kind, reason, and a time range on when each job
 * reached its state. `since` and `until` take an ISO-8601 time or an age (`90s`, `30m`, `2h`, `7d`: that
 * long before the API's clock), as the CLI's `--since 2h` does.
 */
export interface JobFilter {
  state?: string;
  kind?: string;
  reason?: string;
  since?: string;
  until?: string;
}

const UNIT_MS: Readonly<Record<string, number>> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A time filter as an ISO-8601 UTC time: an age is taken back from `now` (epoch ms); an ISO time with a
 * zone is normalised. Anything else is an error message for the form.
 */
export function parseTimeFilter(text: string, now: number): { iso: string } | { error: string } {
  const trimmed = text.trim();
  const age = /^(\d{1,6})\s*([smhd])$/i.exec(trimmed);
  if (age) return { iso: new Date(now - Number(age[1]) * UNIT_MS[age[2]!.toLowerCase()]!).toISOString() };
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(trimmed)) {
    const at = Date.parse(trimmed);
    if (!Number.isNaN(at)) return { iso: new Date(at).toISOString() };
  }
  return { error: `“${trimmed}” is neither an age (30m, 2h, 7d) nor an ISO-8601 time with its zone (2026-01-05T09:00:00Z)` };
}

/** The query string of a listing with this filter (empty fields left out), for links and redirects. */
export function filterQuery(filter: JobFilter, extra: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries({ ...filter, ...extra })) if (value) params.set(key, value);
  const text = params.toString();
  return text ? `?${text}` : '';
}
