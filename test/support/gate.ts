/**
 * A point a locked method waits at until the test opens it: the test learns that the method is running (it holds
 * its locks) without sleeping, and decides when it goes on.
 */
export class Gate {
  private opened!: () => void;
  private arrived!: () => void;
  private openedP!: Promise<void>;
  private arrivedP!: Promise<void>;

  constructor() {
    this.reset();
  }

  /** Called by the method: tells the test it is inside, then waits to be let out. */
  async pass(): Promise<void> {
    this.arrived();
    await this.openedP;
  }

  /** Resolves once a method has reached the gate. */
  reached(): Promise<void> {
    return this.arrivedP;
  }

  /** Lets the waiting method (and any later one) through. */
  open(): void {
    this.opened();
  }

  /** Closes the gate again for the next test. */
  reset(): void {
    this.openedP = new Promise((resolve) => (this.opened = resolve));
    this.arrivedP = new Promise((resolve) => (this.arrived = resolve));
  }
}
