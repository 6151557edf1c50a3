import { AsyncLocalStorage } from 'node:async_hooks';
import type { AnnotationValue, Span, Tracing } from '../../functions/platform/tracing.ts';

/** A span as {@link RecordingTracing} kept it. */
export interface RecordedSpan {
  name: string;
  /** The span it ran in, if any. */
  parent: RecordedSpan | undefined;
  annotations: Record<string, AnnotationValue>;
  metadata: Record<string, unknown>;
  error?: unknown;
  closed: boolean;
}

/**
 * Tracing that keeps every span in memory, with the current span carried through async calls as X-Ray's
 * context is: a test reads which annotations each span got, and which span a call ran in.
 */
export class RecordingTracing implements Tracing {
  readonly spans: RecordedSpan[] = [];
  /** Annotations made outside any span (X-Ray's: the invocation's handler subsegment). */
  readonly root: Record<string, AnnotationValue> = {};
  private readonly current = new AsyncLocalStorage<RecordedSpan>();

  async span<T>(name: string, fn: (span: Span) => Promise<T>): Promise<T> {
    const recorded: RecordedSpan = { name, parent: this.current.getStore(), annotations: {}, metadata: {}, closed: false };
    this.spans.push(recorded);
    const span: Span = {
      annotate: (key, value) => void (recorded.annotations[key] = value),
      describe: (key, value) => void (recorded.metadata[key] = value),
    };
    try {
      return await this.current.run(recorded, () => fn(span));
    } catch (error) {
      recorded.error = error;
      throw error;
    } finally {
      recorded.closed = true;
    }
  }

  annotate(key: string, value: AnnotationValue): void {
    const span = this.current.getStore();
    if (span) span.annotations[key] = value;
    else this.root[key] = value;
  }

  named(name: string): RecordedSpan[] {
    return this.spans.filter((s) => s.name === name);
  }
}
