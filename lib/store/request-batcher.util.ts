/**
 * Coalesces concurrent requests into batches: a request is sent at once when fewer than `maxInFlight` batches are
 * running, otherwise it waits and leaves with the next batch. Under no load every batch holds one request (no added
 * latency); under load one round trip and one commit serve many callers (group commit on the client side).
 * @internal
 */
export class RequestBatcher<I, O> {
  private readonly queue: Array<{ item: I; resolve: (output: O) => void; reject: (error: unknown) => void }> = [];
  private inFlight = 0;

  constructor(
    private readonly send: (items: readonly I[]) => Promise<readonly O[]>,
    private readonly maxInFlight: number,
    private readonly maxBatch: number,
  ) {}

  /** Queues `item`; resolves with its own output, or rejects with the error of its batch. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.drain();
    });
  }

  private drain(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      // The slot is freed before the callers resume, so a caller that submits again at once is sent at once.
      this.send(batch.map((entry) => entry.item)).then(
        (outputs) => {
          this.inFlight--;
          batch.forEach((entry, i) => entry.resolve(outputs[i] as O));
          this.drain();
        },
        (error: unknown) => {
          this.inFlight--;
          batch.forEach((entry) => entry.reject(error));
          this.drain();
        },
      );
    }
  }
}

/**
 * One `RequestBatcher` per key, made on first use: a batch never mixes two keys (e.g. two leases, which one statement
 * cannot grant together).
 * @internal
 */
export class KeyedRequestBatchers<K, I, O> {
  private readonly batchers = new Map<K, RequestBatcher<I, O>>();

  constructor(
    private readonly send: (key: K, items: readonly I[]) => Promise<readonly O[]>,
    private readonly maxInFlight: number,
    private readonly maxBatch: number,
  ) {}

  /** Queues `item` with the other items of `key`; resolves with its own output, or rejects with the error of its batch. */
  submit(key: K, item: I): Promise<O> {
    let batcher = this.batchers.get(key);
    if (batcher === undefined) {
      batcher = new RequestBatcher<I, O>((items) => this.send(key, items), this.maxInFlight, this.maxBatch);
      this.batchers.set(key, batcher);
    }
    return batcher.submit(item);
  }
}
