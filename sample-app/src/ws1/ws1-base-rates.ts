/** The rates (per EUR) WS1's rebuilds start from; each generation drifts from these by at most ±2 %. */
export const WS1_BASE_RATES: ReadonlyArray<readonly [currency: string, rate: number]> = [
  ['EUR', 1],
  ['USD', 1.085],
  ['GBP', 0.857],
  ['JPY', 162.3],
  ['CHF', 0.962],
  ['CNY', 7.82],
];

/** The rate of `currency` in `generation`: a deterministic drift, so that every rebuild visibly changes the data. */
export function rateOf(base: number, index: number, generation: number): number {
  if (base === 1) return 1;
  return Math.round(base * (1 + 0.02 * Math.sin(generation * 1.7 + index)) * 1e6) / 1e6;
}
