import * as z from 'zod';
import { unstorableParts } from '../../platform/dynamo.ts';

/**
 * The fields of a contact other than its number and zone — `externalId`, `variables` — and their limits:
 * the rules every contact meets, whether it came as JSON or as a CSV row. Apart from the number's rules
 * (numbers.ts, which carry libphonenumber's metadata) and from the zone's (timezone.ts, which needs luxon),
 * so that the intake can check an echoed externalId without bundling either. Pure.
 */

/** The longest `externalId`, in characters (UTF-16 code units, as JavaScript and zod count). */
export const MAX_EXTERNAL_ID = 128;
/** The most variables one contact carries; also the most distinct variable names one batch has (one export column each). */
export const MAX_VARIABLES = 50;
/** The largest a contact's variables may be: the UTF-8 bytes of `JSON.stringify(variables)` (see {@link variablesBytes}). */
export const MAX_VARIABLES_BYTES = 4096;
/** The longest variable name, in characters. */
export const MAX_VARIABLE_NAME = 64;

/**
 * Column names no variable may take, compared without regard to case: the CSV import's own columns and
 * the export's fixed ones. A variable named `status` would otherwise be a second `status` column in the
 * export, and an export re-imported would read its result columns as variables of the same names.
 */
export const RESERVED_COLUMNS = ['number', 'external_id', 'timezone', 'status', 'code', 'attempts', 'recording_url', 'transcript_url', 'summary', 'ended_reason'] as const;
const reserved: ReadonlySet<string> = new Set(RESERVED_COLUMNS);

/** A variable's value: the agent's prompt reads it. A CSV cell is always a string (no type inference). */
export type VariableValue = string | number | boolean;
/** A contact's variables: a flat map, no nesting, no null. */
export type Variables = Record<string, VariableValue>;

// Unicode's control characters (Cc): C0, DEL and C1.
const ANY_CONTROL = /\p{Cc}/u;

/**
 * The size of a contact's variables as {@link MAX_VARIABLES_BYTES} measures it: the UTF-8 byte length of
 * `JSON.stringify(variables)` — names and values, with JSON's quotes, colons, commas and escapes (a
 * newline counts 2, a control character 6, `é` 2, an emoji 4; non-ASCII is not escaped).
 *
 * @example
 * variablesBytes({ name: 'Zoë' }); // → 15: {"name":"Zoë"} is 14 characters, ë is 2 bytes
 */
export const variablesBytes = (variables: Variables): number => Buffer.byteLength(JSON.stringify(variables), 'utf8');

/** What is wrong with a variable name, or undefined when it may be one: 1–64 characters, no control characters, no surrounding spaces, no formula's first character, not reserved. */
export function variableNameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > MAX_VARIABLE_NAME) return `a variable name is 1–${MAX_VARIABLE_NAME} characters`;
  if (ANY_CONTROL.test(name)) return 'a variable name has no control characters';
  if (name.trim() !== name) return 'a variable name has no leading or trailing spaces';
  // The name is an export column's header: one a spreadsheet would take for a formula is refused here
  // rather than written with a guard that would change it.
  if (/^[=+\-@]/.test(name)) return 'a variable name does not start with =, +, - or @';
  if (reserved.has(name.toLowerCase())) return `"${name}" is reserved (${RESERVED_COLUMNS.join(', ')}): rename the variable`;
  return undefined;
}

/**
 * A number DynamoDB can hold and JSON carries exactly: finite, within ±(2^53 − 1), not closer to zero
 * than 1e-130 (the same rule as every other stored input, `unstorableParts`).
 */
const storableNumber = z.number().superRefine((n, ctx) => {
  for (const part of unstorableParts(n)) ctx.addIssue({ code: 'custom', message: part.message });
});

export const variableValueSchema = z.union([z.string(), storableNumber, z.boolean()], { error: 'expected a string, number or boolean' });

/**
 * A contact's variables: at most {@link MAX_VARIABLES} names (each {@link variableNameProblem}-free, none
 * differing from another only in case), at most {@link MAX_VARIABLES_BYTES} serialised. An issue names the
 * variable (`variables.first_name`) or the map.
 */
export const variablesSchema = z.record(z.string(), variableValueSchema).superRefine((variables, ctx) => {
  const names = Object.keys(variables);
  if (names.length > MAX_VARIABLES) ctx.addIssue({ code: 'custom', message: `at most ${MAX_VARIABLES} variables (${names.length} given)` });
  const seen = new Map<string, string>();
  for (const name of names) {
    const problem = variableNameProblem(name);
    if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
    const first = seen.get(name.toLowerCase());
    if (first !== undefined) ctx.addIssue({ code: 'custom', path: [name], message: `differs from variable "${first}" only in case` });
    else seen.set(name.toLowerCase(), name);
  }
  const bytes = variablesBytes(variables);
  if (bytes > MAX_VARIABLES_BYTES) ctx.addIssue({ code: 'custom', message: `variables take ${bytes} bytes serialised (JSON, UTF-8); at most ${MAX_VARIABLES_BYTES}` });
});

/** What is wrong with an `externalId`, or undefined: 1–128 characters, no control characters. */
export function externalIdProblem(id: string): string | undefined {
  if (id.length === 0 || id.length > MAX_EXTERNAL_ID) return `an externalId is 1–${MAX_EXTERNAL_ID} characters`;
  if (ANY_CONTROL.test(id)) return 'an externalId has no control characters';
  return undefined;
}

/** The customer's own key for a contact, unique within its batch. */
export const externalIdSchema = z.string().superRefine((id, ctx) => {
  const problem = externalIdProblem(id);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});
