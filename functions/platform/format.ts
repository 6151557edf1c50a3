/**
 * A duration in the largest unit that keeps it at least 1, with up to two decimals (whole milliseconds
 * below a second): 900 ms, 1.23 s, 5 min, 10 h, 5.32 d. The CLI and the panel print every duration with it.
 */
export function formatDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1_000, 's'],
  ];
  for (const [size, unit] of units) if (Math.abs(ms) >= size) return `${round2(ms / size)} ${unit}`;
  return `${Math.round(ms)} ms`;
}

const round2 = (n: number): string => String(Number(n.toFixed(2)));
