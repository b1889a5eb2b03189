/**
 * Splits `amount` cents over `principals` in proportion to each, never giving a part more than its principal.
 * The parts add up to `amount` exactly (rounding cents go one each to the first parts that can take them).
 * @throws RangeError when `amount` exceeds the sum of the principals or is negative.
 */
export function splitProRata(amount: number, principals: readonly number[]): number[] {
  const total = principals.reduce((sum, p) => sum + p, 0);
  if (amount < 0 || amount > total) throw new RangeError(`cannot split ${amount} over a total of ${total}`);
  if (amount === 0) return principals.map(() => 0);
  const parts = principals.map((p) => Math.floor((amount * p) / total));
  let left = amount - parts.reduce((sum, p) => sum + p, 0);
  while (left > 0) {
    for (let i = 0; i < parts.length && left > 0; i++) {
      if ((principals[i] ?? 0) - (parts[i] ?? 0) > 0) {
        parts[i] = (parts[i] ?? 0) + 1;
        left--;
      }
    }
  }
  return parts;
}
