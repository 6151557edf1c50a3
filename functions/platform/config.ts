import * as z from 'zod';

/** Raised at start-up when the environment does not satisfy a configuration schema. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Parses environment variables with a zod schema, once, at start-up (cold start); a missing or
 * malformed variable stops the process with every problem listed, rather than failing a request later.
 *
 * @example
 * const config = parseConfig(z.object({ JOBS_TABLE: z.string().min(3) }));
 */
export function parseConfig<S extends z.ZodType>(schema: S, env: Record<string, string | undefined> = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return result.data;
}

/** A JSON-encoded environment variable checked against `schema`. */
export function jsonEnv<S extends z.ZodType>(schema: S) {
  return z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'not valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema);
}

/** Positive number from an environment string, with a default. */
export const positiveNumberEnv = (fallback: number) => z.coerce.number().positive().default(fallback);
