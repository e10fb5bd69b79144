/**
 * Output capture for sandbox commands: keeps the first and last halves of the cap and notes what
 * was cut from the middle, so a long test log still shows how it started and how it ended.
 * Works on bytes (a UTF-8 character split at the cut is replaced, never mis-decoded silently).
 */
export class CappedOutput {
  private readonly head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private dropped = 0;
  private readonly halfCap: number;

  constructor(readonly capBytes: number) {
    this.halfCap = Math.max(1, Math.floor(capBytes / 2));
  }

  push(chunk: Buffer): void {
    let rest = chunk;
    if (this.headBytes < this.halfCap) {
      const take = Math.min(this.halfCap - this.headBytes, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(rest);
    this.tailBytes += rest.length;
    // Trim the tail back to its half, counting what falls out of the middle.
    while (this.tailBytes > this.halfCap) {
      const first = this.tail[0];
      if (!first) break;
      const excess = this.tailBytes - this.halfCap;
      if (first.length <= excess) {
        this.tail.shift();
        this.tailBytes -= first.length;
        this.dropped += first.length;
      } else {
        this.tail[0] = first.subarray(excess);
        this.tailBytes -= excess;
        this.dropped += excess;
      }
    }
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  get droppedBytes(): number {
    return this.dropped;
  }

  /** The kept bytes, with a one-line note where the middle was cut. */
  text(): string {
    const head = Buffer.concat(this.head).toString('utf8');
    const tail = Buffer.concat(this.tail).toString('utf8');
    if (this.dropped === 0) return head + tail;
    return `${head}\n[... ${this.dropped} bytes of output cut ...]\n${tail}`;
  }
}
