import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/** Where redial's counters go: CloudWatch (EMF through Powertools) on AWS, memory locally and in tests. */
export interface MetricsSink {
  /** Adds `value` (default 1) to the counter `name` with these dimensions. */
  count(name: string, dimensions?: Record<string, string>, value?: number): void;
}

/** The CloudWatch namespace of every redial metric; the alarms in lib/ watch it. */
export const METRICS_NAMESPACE = 'Redial';

/** Publishes each count at once as an EMF record (Powertools single metric). */
export function powertoolsMetrics(serviceName: string): MetricsSink {
  const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName });
  return {
    count(name, dimensions = {}, value = 1) {
      const single = metrics.singleMetric();
      for (const [key, v] of Object.entries(dimensions)) single.addDimension(key, v);
      single.addMetric(name, MetricUnit.Count, value);
    },
  };
}

/** Keeps counts in memory; the local runtime shows them and tests read them. */
export class MemoryMetrics implements MetricsSink {
  private readonly counts = new Map<string, { name: string; dimensions: Record<string, string>; value: number }>();

  count(name: string, dimensions: Record<string, string> = {}, value = 1): void {
    const key = `${name}|${Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(',')}`;
    const entry = this.counts.get(key) ?? { name, dimensions, value: 0 };
    entry.value += value;
    this.counts.set(key, entry);
  }

  /** Sum of `name` over every dimension set that includes `match`. */
  total(name: string, match: Record<string, string> = {}): number {
    let sum = 0;
    for (const entry of this.counts.values()) {
      if (entry.name !== name) continue;
      if (Object.entries(match).every(([k, v]) => entry.dimensions[k] === v)) sum += entry.value;
    }
    return sum;
  }

  /** Every counter, for the ops API. */
  list(): { name: string; dimensions: Record<string, string>; value: number }[] {
    return [...this.counts.values()].map((e) => ({ ...e, dimensions: { ...e.dimensions } }));
  }
}
