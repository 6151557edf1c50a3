import { Tracer } from '@aws-lambda-powertools/tracer';
import { captureLambdaHandler } from '@aws-lambda-powertools/tracer/middleware';
import type middy from '@middy/core';
import type { AnnotationValue, Span, Tracing } from './tracing.ts';

/**
 * X-Ray through Powertools Tracer: what every Lambda entry point (functions/app/lambda) traces with.
 *
 * Tracer turns itself on only inside Lambda (it reads `AWS_EXECUTION_ENV`) and only when
 * `POWERTOOLS_TRACE_ENABLED` is not `false`; anywhere else every call below is a no-op that runs the
 * code it wraps. The local host and the tests never build one: they pass `noTracing`
 * (functions/platform/tracing.ts).
 *
 * Two choices differ from Tracer's defaults, on purpose:
 * - **No outbound HTTP capture.** Tracer would patch node:http, node:https and fetch, and add an
 *   `X-Amzn-Trace-Id` header to every request: to the call placer and to customers' webhook endpoints.
 *   Those are not ours to trace; the job run's span times the request anyway.
 * - **No response capture.** A handler's response becomes trace metadata by default; `POST /v1/endpoints`
 *   answers with an endpoint's signing secret, which must not end up in X-Ray.
 */
export class XrayTracing implements Tracing {
  readonly tracer: Tracer;
  private readonly serviceName: string;

  constructor(serviceName: string) {
    this.serviceName = serviceName;
    this.tracer = new Tracer({ serviceName, captureHTTPsRequests: false });
  }

  /** Whether traces are recorded (inside Lambda, with tracing on). */
  get enabled(): boolean {
    return this.tracer.isTracingEnabled();
  }

  /** The middy middleware that opens the invocation's handler subsegment (`## <handler>`), with ColdStart and Service annotations. */
  handlerMiddleware(): middy.MiddlewareObj {
    return captureLambdaHandler(this.tracer, { captureResponse: false }) as middy.MiddlewareObj;
  }

  /** Traces an AWS SDK v3 client's requests as subsegments, and passes the trace on (SQS links consumers to producers). */
  capture<T>(client: T): T {
    return this.tracer.captureAWSv3Client(client) ?? client;
  }

  span<T>(name: string, fn: (span: Span) => Promise<T>): Promise<T> {
    if (!this.enabled) return fn(noSpan);
    return this.tracer.provider.captureAsyncFunc(`### ${name}`, async (subsegment) => {
      const span: Span = {
        annotate: (key, value) => subsegment?.addAnnotation(key, value),
        // Under the service's namespace, as Tracer's own putMetadata does.
        describe: (key, value) => subsegment?.addMetadata(key, value, this.serviceName),
      };
      try {
        return await fn(span);
      } catch (error) {
        if (error instanceof Error) subsegment?.addError(error);
        throw error;
      } finally {
        subsegment?.close();
      }
    }) as Promise<T>;
  }

  annotate(key: string, value: AnnotationValue): void {
    this.tracer.putAnnotation(key, value);
  }
}

const noSpan: Span = { annotate: () => undefined, describe: () => undefined };
