/**
 * The one rule for every long output Dockhand keeps or shows: keep its start (what ran) and its
 * end (how it ended), cut the middle and count what was cut. It works as the output arrives, so a
 * command's output costs at most the kept amount of memory however much the command prints.
 *
 * The unit is the chunk's: bytes for a `Buffer` (a sandbox command's output, capped in bytes),
 * UTF-16 characters for a `string` (text shown to the model, capped in characters). How the cut
 * is announced is the caller's: a sandbox log and a tool result say it differently.
 */
export interface HeadAndTailOptions<Chunk> {
  /** Units kept from the start. */
  head: number;
  /** Units kept from the end. */
  tail: number;
  /** The part of `chunk` from `start` to `end` (to its end when `end` is left out). */
  slice(chunk: Chunk, start: number, end?: number): Chunk;
}

export class HeadAndTail<Chunk extends { readonly length: number }> {
  private readonly headChunks: Chunk[] = [];
  private headLength = 0;
  private tailChunks: Chunk[] = [];
  private tailLength = 0;
  private droppedLength = 0;

  constructor(private readonly options: HeadAndTailOptions<Chunk>) {}

  push(chunk: Chunk): void {
    const { head, tail, slice } = this.options;
    let rest = chunk;
    if (this.headLength < head && rest.length > 0) {
      const take = Math.min(head - this.headLength, rest.length);
      this.headChunks.push(slice(rest, 0, take));
      this.headLength += take;
      rest = slice(rest, take);
    }
    if (rest.length === 0) return;
    this.tailChunks.push(rest);
    this.tailLength += rest.length;
    // Trim the tail back to its size, counting what falls out of the middle.
    while (this.tailLength > tail) {
      const first = this.tailChunks[0];
      if (!first) break;
      const excess = this.tailLength - tail;
      if (first.length <= excess) {
        this.tailChunks.shift();
        this.tailLength -= first.length;
        this.droppedLength += first.length;
      } else {
        this.tailChunks[0] = slice(first, excess);
        this.tailLength -= excess;
        this.droppedLength += excess;
      }
    }
  }

  /** The kept start, in the order it arrived. */
  get head(): readonly Chunk[] {
    return this.headChunks;
  }

  /** The kept end, in the order it arrived. */
  get tail(): readonly Chunk[] {
    return this.tailChunks;
  }

  /** Units cut from the middle; 0 while everything pushed fits. */
  get dropped(): number {
    return this.droppedLength;
  }
}
