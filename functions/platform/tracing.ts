/**
 * Traces, as the code that is traced sees them: named spans with searchable annotations. On AWS this is
 * X-Ray through Powertools Tracer (functions/platform/xray.ts); locally and in tests it is
 * {@link noTracing}, which records nothing and costs nothing. The job layer and the contexts depend on
 * this interface only, never on X-Ray.
 */

/** An annotation's value: X-Ray indexes strings, numbers and booleans. */
export type AnnotationValue = string | number | boolean;

/** One span: a unit of work inside a request or a job run (an X-Ray subsegment). */
export interface Span {
  /**
   * A searchable key on this span (`annotation.jobId = "…"` in X-Ray). Keys are letters, digits and
   * underscores. X-Ray indexes at most 50 annotations per trace: keep them to identities, and put the rest
   * in {@link Span.describe}.
   */
  annotate(key: string, value: AnnotationValue): void;
  /** Detail kept with the span for whoever reads the trace, not searchable (X-Ray metadata). */
  describe(key: string, value: unknown): void;
}

/** Where spans go. */
export interface Tracing {
  /**
   * Runs `fn` in a span of its own, named `name`, a child of the span the caller runs in; requests made
   * inside `fn` (AWS SDK calls) are its children. An error `fn` throws is recorded on the span and thrown
   * on. Spans run concurrently each keep their own annotations.
   */
  span<T>(name: string, fn: (span: Span) => Promise<T>): Promise<T>;
  /** Annotates the span the caller runs in (a request's handler, or the innermost {@link Tracing.span}). */
  annotate(key: string, value: AnnotationValue): void;
}

const noSpan: Span = {
  annotate: () => undefined,
  describe: () => undefined,
};

/** Traces nothing: the local host, the tests and the benchmarks run on it. */
export const noTracing: Tracing = {
  span: (_name, fn) => fn(noSpan),
  annotate: () => undefined,
};
