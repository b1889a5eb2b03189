/** WS2's products and their base prices in EUR; WS2 prices them in every currency WS1 publishes. */
export const WS2_CATALOGUE: ReadonlyArray<{ readonly product: string; readonly eur: number }> = [
  { product: 'coffee', eur: 3.2 },
  { product: 'bicycle', eur: 480 },
  { product: 'laptop', eur: 1290 },
];
