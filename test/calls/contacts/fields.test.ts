import { describe, expect, it } from 'vitest';
import {
  externalIdSchema,
  MAX_VARIABLES_BYTES,
  RESERVED_COLUMNS,
  variableNameProblem,
  variablesBytes,
  variablesSchema,
} from '../../../functions/calls/contacts/fields.ts';
import { timezoneSchema } from '../../../functions/calls/contacts/timezone.ts';

const paths = (result: { success: boolean; error?: { issues: { path: PropertyKey[] }[] } }) => result.error?.issues.map((i) => i.path.join('.')) ?? [];

describe('contact fields: externalId, variables, timezone', () => {
  it('AnExternalIdIsOneTo128CharactersWithoutControlCharacters', () => {
    expect(externalIdSchema.safeParse('crm-42').success).toBe(true);
    expect(externalIdSchema.safeParse('x'.repeat(128)).success).toBe(true);
    expect(externalIdSchema.safeParse('x'.repeat(129)).success).toBe(false);
    expect(externalIdSchema.safeParse('').success).toBe(false);
    expect(externalIdSchema.safeParse('a\nb').success).toBe(false);
  });

  it('VariablesAreAFlatMapOfStringsNumbersAndBooleans', () => {
    expect(variablesSchema.parse({ first_name: 'Ada', balance: 12.5, vip: true, ref: '00123' })).toEqual({ first_name: 'Ada', balance: 12.5, vip: true, ref: '00123' });
    const nested = variablesSchema.safeParse({ ok: 'x', address: { city: 'Leeds' }, tags: ['a'], missing: null });
    expect(nested.success).toBe(false);
    expect(paths(nested).sort()).toEqual(['address', 'missing', 'tags']);
  });

  it('AVariableNumberMustBeOneDynamoDbStoresExactly', () => {
    expect(variablesSchema.safeParse({ n: 2 ** 53 - 1 }).success).toBe(true);
    expect(paths(variablesSchema.safeParse({ n: 2 ** 53 }))).toEqual(['n']);
    expect(paths(variablesSchema.safeParse({ n: 1e-200 }))).toEqual(['n']);
    expect(variablesSchema.safeParse({ n: Number.NaN }).success).toBe(false);
  });

  it('AtMostFiftyVariables', () => {
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`v${i}`, i]));
    expect(variablesSchema.safeParse(fifty).success).toBe(true);
    const more = variablesSchema.safeParse({ ...fifty, v50: 50 });
    expect(more.success).toBe(false);
    expect(more.error!.issues[0]!.message).toBe('at most 50 variables (51 given)');
  });

  it('TheSizeIsTheUtf8BytesOfTheJsonSerialisation', () => {
    expect(variablesBytes({ name: 'Zoë' })).toBe(15);
    expect(variablesBytes({ a: 1, b: true })).toBe('{"a":1,"b":true}'.length);
    // JSON escapes count: a newline is two bytes, a control character six.
    expect(variablesBytes({ a: '\n' })).toBe('{"a":"\\n"}'.length);
    expect(variablesBytes({ a: '\u0001' })).toBe('{"a":"\\u0001"}'.length);
    // An emoji is four UTF-8 bytes (two UTF-16 units).
    expect(variablesBytes({ a: '😀' })).toBe(8 + 4);
  });

  it('FourKilobytesSerialisedIsTheLimitToTheByte', () => {
    // {"v":"…"} is 8 bytes around the value.
    const exactly = { v: 'x'.repeat(MAX_VARIABLES_BYTES - 8) };
    expect(variablesBytes(exactly)).toBe(MAX_VARIABLES_BYTES);
    expect(variablesSchema.safeParse(exactly).success).toBe(true);
    const over = variablesSchema.safeParse({ v: 'x'.repeat(MAX_VARIABLES_BYTES - 7) });
    expect(over.error!.issues[0]!.message).toBe('variables take 4097 bytes serialised (JSON, UTF-8); at most 4096');
    // Multi-byte characters count by their bytes: 2,045 × 'é' is 4,090 bytes, 8 more is over.
    expect(variablesSchema.safeParse({ v: 'é'.repeat(2045) }).success).toBe(false);
  });

  it('AVariableNameIsNotReservedNorSpelledTwiceNorBlank', () => {
    for (const name of RESERVED_COLUMNS) expect(variableNameProblem(name.toUpperCase()), name).toMatch(/is reserved/);
    expect(variableNameProblem('first name')).toBeUndefined();
    expect(variableNameProblem(' padded')).toMatch(/leading or trailing/);
    expect(variableNameProblem('')).toMatch(/1–64/);
    expect(variableNameProblem('x'.repeat(65))).toMatch(/1–64/);
    expect(variableNameProblem('a\tb')).toMatch(/control/);
    for (const name of ['=x', '+x', '-x', '@x']) expect(variableNameProblem(name), name).toMatch(/does not start with/);
    expect(variableNameProblem('x=1')).toBeUndefined();
    expect(paths(variablesSchema.safeParse({ Name: 'a', name: 'b' }))).toEqual(['name']);
    expect(paths(variablesSchema.safeParse({ status: 'vip' }))).toEqual(['status']);
  });

  it('ZoneAnswersStayRightPastTheBoundOfRememberedOnes', () => {
    for (let i = 0; i < 1_100; i++) expect(timezoneSchema.safeParse(`Nowhere/Place_${i}`).success).toBe(false);
    expect(timezoneSchema.safeParse('Europe/Paris').success).toBe(true);
    expect(timezoneSchema.safeParse('Nowhere/Place_0').success).toBe(false);
  });

  it('ATimezoneIsAnIanaZoneNotAnOffset', () => {
    for (const zone of ['Europe/Berlin', 'America/Argentina/Buenos_Aires', 'UTC', 'Asia/Kolkata']) expect(timezoneSchema.safeParse(zone).success, zone).toBe(true);
    for (const zone of ['Mars/Olympus', '', '+03:00', '-05:00', 'UTC+3', 'Berlin']) expect(timezoneSchema.safeParse(zone).success, zone).toBe(false);
  });
});
