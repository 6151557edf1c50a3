import { escapeHtml } from '../platform/html.ts';

/**
 * A tagged template for HTML that escapes every interpolated value unless it is already {@link Html}
 * (the result of another `html` template or {@link raw}). The panel builds every page with it, so no
 * stored value (a job error, a URL, an email) can inject markup.
 */
export class Html {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}


type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return (value as readonly Value[]).map(render).join('');
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

/** Trusted markup, passed through unescaped. Only for constants. */
export const raw = (markup: string): Html => new Html(markup);
