import * as z from 'zod';

/**
 * An opaque cursor over a batch's contacts in upload order: `<label>:<batchId>:<offset>`, base64url. It
 * names its batch (and so its tenant), so a route refuses one of another batch (400) instead of reading it
 * as an offset; the label keeps one listing's cursor out of another's.
 */
export function offsetCursor(label: string, maxDigits: number, notOurs: string) {
  const pattern = new RegExp(`^${label}:([A-Za-z0-9_.-]{1,120}):(\\d{1,${maxDigits}})$`);
  return {
    encode: (batchId: string, offset: number): string => Buffer.from(`${label}:${batchId}:${offset}`).toString('base64url'),
    /** The query parameter: a cursor this listing gave out, read back to its batch and offset. */
    schema: z
      .string()
      .max(256)
      .optional()
      .transform((cursor, ctx) => {
        if (cursor === undefined) return undefined;
        const match = pattern.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
        if (!match) {
          ctx.addIssue({ code: 'custom', message: notOurs });
          return z.NEVER;
        }
        return { batchId: match[1]!, offset: Number(match[2]) };
      }),
  };
}
