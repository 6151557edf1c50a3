import * as z from 'zod';
import { externalIdSchema, MAX_VARIABLES, variablesSchema } from './fields.ts';
import { timezoneSchema } from './timezone.ts';
import type { Variables } from './fields.ts';
import { countryCodeSchema, normaliseNumber } from './numbers.ts';
import type { CountryCode } from './numbers.ts';

/**
 * A contact as a batch takes it, `{number, externalId?, variables?, timezone?}`: its number read against
 * the batch's settings, and what makes contacts unique within a batch. The other fields' rules are in
 * fields.ts. Pure: no I/O, no clock.
 */

/**
 * A contact in a JSON batch. `number` is text here: it is read into E.164 against the batch's settings
 * ({@link normaliseContacts}), since `defaultCountry` lives beside the contacts.
 */
export const contactInputSchema = z.strictObject({
  number: z.string().max(64, 'at most 64 characters'),
  externalId: externalIdSchema.optional(),
  variables: variablesSchema.optional(),
  timezone: timezoneSchema.optional(),
});
export type ContactInput = z.infer<typeof contactInputSchema>;

/** How a batch reads its contacts' numbers and duplicates. */
export interface ContactSettings {
  /** Lets national formats in: `020 7946 0000` with `GB`. */
  defaultCountry?: CountryCode | undefined;
  /** Refuses a possible number that is not valid, instead of accepting it flagged. */
  strictNumbers?: boolean | undefined;
  /** Drops a later contact whose number (after normalisation) an earlier one has, and counts it; otherwise it is refused. */
  dedupe?: boolean | undefined;
}

/** A batch's settings for its contacts, as body fields (the JSON batch) — spread them into the body's schema. */
export const contactSettingsFields = {
  defaultCountry: countryCodeSchema.optional(),
  strictNumbers: z.boolean().optional(),
  dedupe: z.boolean().optional(),
};

/** A contact as redial keeps it: its number in E.164, flagged when not valid, with its region when known. */
export interface Contact {
  /** E.164. */
  number: string;
  /** False for a possible number whose digits are in no assigned range (accepted unless `strictNumbers`). */
  numberValid: boolean;
  /** ISO 3166-1 alpha-2, when the number names one region (see `NormalisedNumber.region`). */
  region?: CountryCode;
  externalId?: string;
  variables?: Variables;
  timezone?: string;
}

/** A contact's number read against the batch's settings: the contact's fields for it, or why it is refused. */
export function contactNumber(text: string, settings: ContactSettings): { ok: true; fields: Pick<Contact, 'number' | 'numberValid' | 'region'> } | { ok: false; message: string } {
  const verdict = normaliseNumber(text, { defaultCountry: settings.defaultCountry });
  if (!verdict.ok) return verdict;
  if (!verdict.valid && settings.strictNumbers) return { ok: false, message: 'a possible number but not a valid one (no assigned range); strictNumbers refuses it' };
  return { ok: true, fields: { number: verdict.number, numberValid: verdict.valid, ...(verdict.region ? { region: verdict.region } : {}) } };
}

/** What one contact's uniqueness check found. */
export type Claim = { outcome: 'new' } | { outcome: 'duplicateNumber'; first: number } | { outcome: 'duplicateExternalId'; first: number };

/**
 * The numbers and externalIds a batch has taken so far, each with where it was first taken (a row or an
 * index): what makes both unique within a batch. Only a contact that is accepted takes its number and id,
 * so a refused contact does not make a later one a duplicate.
 *
 * Memory: two Maps of strings to numbers. Measured by `npm run bench -- import-parse` (docs/benchmarks.md).
 */
export class BatchUniqueness {
  readonly #numbers = new Map<string, number>();
  readonly #externalIds = new Map<string, number>();

  /** Checks a contact and, when it is new on both counts, takes its number and externalId at `at`. A duplicate number is reported before a duplicate externalId. */
  claim(contact: { number: string; externalId?: string | undefined }, at: number): Claim {
    const firstNumber = this.#numbers.get(contact.number);
    if (firstNumber !== undefined) return { outcome: 'duplicateNumber', first: firstNumber };
    if (contact.externalId !== undefined) {
      const firstId = this.#externalIds.get(contact.externalId);
      if (firstId !== undefined) return { outcome: 'duplicateExternalId', first: firstId };
      this.#externalIds.set(contact.externalId, at);
    }
    this.#numbers.set(contact.number, at);
    return { outcome: 'new' };
  }

  /** How many contacts have been taken. */
  get size(): number {
    return this.#numbers.size;
  }
}

/** An issue with one contact of a JSON batch: its path under the contacts array (`[3, 'number']`). */
export interface ContactIssue {
  path: (string | number)[];
  message: string;
}

/** A JSON batch's contacts after normalisation. */
export interface NormalisedContacts {
  contacts: Contact[];
  /** Every variable name the batch uses, in order of first use: the export's variable columns. */
  variableNames: string[];
  /** Contacts dropped as duplicates (`dedupe`). */
  duplicatesDropped: number;
  /** Empty when the batch is accepted. */
  issues: ContactIssue[];
}

/**
 * Reads a JSON batch's contacts (each already through {@link contactInputSchema}) against the batch's
 * settings: numbers into E.164 (refused when not possible; when not valid, refused under `strictNumbers`,
 * else flagged), numbers unique after normalisation (or later ones dropped under `dedupe`), externalIds
 * unique, and at most {@link MAX_VARIABLES} distinct variable names across the batch, each spelled one way.
 *
 * @example
 * // In a body schema: .transform((body, ctx) => { const r = normaliseContacts(body.contacts, body); … })
 * normaliseContacts([{ number: '020 7946 0000' }, { number: '+442079460000' }], { defaultCountry: 'GB' }).issues;
 * // → [{ path: [1, 'number'], message: 'duplicate of contacts.0.number (+442079460000)' }]
 */
export function normaliseContacts(inputs: readonly ContactInput[], settings: ContactSettings): NormalisedContacts {
  const contacts: Contact[] = [];
  const issues: ContactIssue[] = [];
  const unique = new BatchUniqueness();
  const names = new Map<string, string>();
  let duplicatesDropped = 0;
  inputs.forEach((input, i) => {
    const number = contactNumber(input.number, settings);
    if (!number.ok) return void issues.push({ path: [i, 'number'], message: number.message });
    // A name is the batch's once its contact is taken: a refused or dropped contact names no column.
    const fresh = new Map<string, string>();
    let namesOk = true;
    for (const name of Object.keys(input.variables ?? {})) {
      const known = names.get(name.toLowerCase());
      if (known !== undefined && known !== name) {
        issues.push({ path: [i, 'variables', name], message: `spelled "${known}" by an earlier contact: a variable name has one spelling in a batch` });
        namesOk = false;
      } else if (known === undefined) fresh.set(name.toLowerCase(), name);
    }
    if (names.size + fresh.size > MAX_VARIABLES) {
      issues.push({ path: [i, 'variables'], message: `a batch uses at most ${MAX_VARIABLES} distinct variable names (this contact would make ${names.size + fresh.size})` });
      namesOk = false;
    }
    if (!namesOk) return;
    const claim = unique.claim({ number: number.fields.number, externalId: input.externalId }, i);
    switch (claim.outcome) {
      case 'duplicateNumber':
        if (settings.dedupe) duplicatesDropped++;
        else issues.push({ path: [i, 'number'], message: `duplicate of contacts.${claim.first}.number (${number.fields.number})` });
        return;
      case 'duplicateExternalId':
        issues.push({ path: [i, 'externalId'], message: `duplicate of contacts.${claim.first}.externalId` });
        return;
      case 'new':
        for (const [key, name] of fresh) names.set(key, name);
        contacts.push({ ...number.fields, ...pick(input) });
        return;
    }
  });
  return { contacts, variableNames: [...names.values()], duplicatesDropped, issues };
}

const pick = (input: ContactInput): Pick<Contact, 'externalId' | 'variables' | 'timezone'> => ({
  ...(input.externalId !== undefined ? { externalId: input.externalId } : {}),
  ...(input.variables !== undefined && Object.keys(input.variables).length > 0 ? { variables: input.variables } : {}),
  ...(input.timezone !== undefined ? { timezone: input.timezone } : {}),
});
