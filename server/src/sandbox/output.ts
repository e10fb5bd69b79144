import { HeadAndTail } from '../head-and-tail';

/**
 * Output capture for sandbox commands: keeps the first and last halves of the cap and notes what
 * was cut from the middle, so a long test log still shows how it started and how it ended.
 * Works on bytes (a UTF-8 character split at the cut is replaced, never mis-decoded silently).
 */
export class CappedOutput {
  private readonly kept: HeadAndTail<Buffer>;

  constructor(readonly capBytes: number) {
    const half = Math.max(1, Math.floor(capBytes / 2));
    this.kept = new HeadAndTail<Buffer>({ head: half, tail: half, slice: (chunk, start, end) => chunk.subarray(start, end) });
  }

  push(chunk: Buffer): void {
    this.kept.push(chunk);
  }

  get truncated(): boolean {
    return this.kept.dropped > 0;
  }

  get droppedBytes(): number {
    return this.kept.dropped;
  }

  /** The kept bytes, with a one-line note where the middle was cut. */
  text(): string {
    const head = Buffer.concat(this.kept.head).toString('utf8');
    const tail = Buffer.concat(this.kept.tail).toString('utf8');
    if (!this.truncated) return head + tail;
    return `${head}\n[... ${this.kept.dropped} bytes of output cut ...]\n${tail}`;
  }
}
