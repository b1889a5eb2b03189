import { KeyedRequestBatchers, RequestBatcher } from '../../lib/store/request-batcher.util.js';

describe('RequestBatcher', () => {
  it('sends a lone request at once, and coalesces the ones that arrive while batches are in flight', async () => {
    const batches: number[][] = [];
    const batcher = new RequestBatcher<number, number>(
      async (items) => {
        batches.push([...items]);
        await new Promise((resolve) => setTimeout(resolve, 10));
        return items.map((item) => item * 10);
      },
      1,
      32,
    );
    expect(await batcher.submit(1)).toBe(10);
    const outputs = await Promise.all(Array.from({ length: 20 }, (_, i) => batcher.submit(i + 2)));
    expect(outputs).toEqual(Array.from({ length: 20 }, (_, i) => (i + 2) * 10));
    expect(batches).toEqual([[1], [2], Array.from({ length: 19 }, (_, i) => i + 3)]);
  });

  it('respects the batch size and the number of batches in flight', async () => {
    let inFlight = 0;
    let maxSeen = 0;
    const sizes: number[] = [];
    const batcher = new RequestBatcher<number, number>(
      async (items) => {
        inFlight++;
        maxSeen = Math.max(maxSeen, inFlight);
        sizes.push(items.length);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight--;
        return [...items];
      },
      2,
      4,
    );
    await Promise.all(Array.from({ length: 30 }, (_, i) => batcher.submit(i)));
    expect(maxSeen).toBe(2);
    expect(Math.max(...sizes)).toBe(4);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(30);
  });

  it('rejects every request of a failed batch with its error, and keeps serving later ones', async () => {
    let fail = true;
    const batcher = new RequestBatcher<number, number>(
      async (items) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (fail) throw new Error('boom');
        return [...items];
      },
      1,
      32,
    );
    const results = await Promise.allSettled([batcher.submit(1), batcher.submit(2), batcher.submit(3)]);
    expect(results.every((r) => r.status === 'rejected' && (r.reason as Error).message === 'boom')).toBe(true);
    fail = false;
    expect(await batcher.submit(4)).toBe(4);
  });
});

describe('KeyedRequestBatchers', () => {
  it('never puts two keys in one batch, and sends each key\'s batch with its key', async () => {
    const batches: Array<[string, number[]]> = [];
    const batchers = new KeyedRequestBatchers<string, number, string>(
      async (key, items) => {
        batches.push([key, [...items]]);
        await new Promise((resolve) => setTimeout(resolve, 10));
        return items.map((item) => `${key}${item}`);
      },
      1,
      32,
    );
    const outputs = await Promise.all([1, 2, 3, 4, 5, 6].map((item) => batchers.submit(item % 2 === 0 ? 'even' : 'odd', item)));
    expect(outputs).toEqual(['odd1', 'even2', 'odd3', 'even4', 'odd5', 'even6']);
    // One batch in flight per key: each key's first request leaves at once, the others together after it.
    expect(batches).toEqual([
      ['odd', [1]],
      ['even', [2]],
      ['odd', [3, 5]],
      ['even', [4, 6]],
    ]);
  });
});
