/**
 * The coordinator's readers/writer lock: many read invocations, or one write invocation (and rebalancing's
 * exclusive work), at a time. Waiters enter in arrival order, so a writer is not starved by a stream of readers.
 */
export class ReadWriteLock {
  private readers = 0;
  private writer = false;
  private waiting: { write: boolean; resume: () => void }[] = [];

  async acquire(write: boolean): Promise<() => void> {
    if (this.canEnter(write) && this.waiting.length === 0) this.enter(write);
    else await new Promise<void>((resume) => this.waiting.push({ write, resume }));
    return () => this.release(write);
  }

  private canEnter(write: boolean): boolean {
    return write ? !this.writer && this.readers === 0 : !this.writer;
  }

  private enter(write: boolean): void {
    if (write) this.writer = true;
    else this.readers += 1;
  }

  private release(write: boolean): void {
    if (write) this.writer = false;
    else this.readers -= 1;
    while (this.waiting.length > 0 && this.canEnter(this.waiting[0].write)) {
      const next = this.waiting.shift()!;
      this.enter(next.write);
      next.resume();
    }
  }
}
