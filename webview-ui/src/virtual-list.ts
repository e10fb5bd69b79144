/*
 * A list that keeps only the rows near the viewport in the DOM, so a trajectory of thousands of
 * events scrolls as smoothly as a short one. Rows have different heights: each is estimated until
 * it has been rendered once, then its measured height is kept. It sticks to the bottom while the
 * developer is at the bottom (following a live task) and leaves the scroll alone otherwise.
 */

export interface VirtualListOptions {
  /** Draws row `index` into a fresh element. */
  renderRow(index: number): HTMLElement;
  /** Changes when a row's content changes, so a rendered row is redrawn. */
  rowVersion(index: number): string;
  estimatedHeight?: number;
  overscanPixels?: number;
}

export class VirtualList {
  private readonly content: HTMLElement;
  private heights: number[] = [];
  private offsets: number[] = [0];
  private offsetsValidUpTo = 0;
  private readonly rendered = new Map<number, { element: HTMLElement; version: string }>();
  private count = 0;
  private frame = 0;
  private stickToBottom = true;
  /** scrollTop at the last scroll event: only a move up is the developer leaving the bottom. */
  private lastScrollTop = 0;

  constructor(
    private readonly viewport: HTMLElement,
    private readonly options: VirtualListOptions,
  ) {
    this.content = document.createElement('div');
    this.content.className = 'virtual-content';
    this.content.setAttribute('role', 'list');
    viewport.replaceChildren(this.content);
    viewport.addEventListener('scroll', () => {
      // A scroll event arrives a frame after the scroll. By then the panel above may have grown
      // (an approval card, the review area) and shrunk the viewport, so "not at the bottom" alone
      // would stop following a live run the developer never scrolled: only a move up stops it.
      const top = viewport.scrollTop;
      if (this.isAtBottom()) this.stickToBottom = true;
      else if (top < this.lastScrollTop - 1) this.stickToBottom = false;
      this.lastScrollTop = top;
      this.schedule();
    });
    new ResizeObserver(() => this.schedule()).observe(viewport);
  }

  get size(): number {
    return this.count;
  }

  /** Replaces everything (another task selected). */
  reset(count: number): void {
    for (const { element } of this.rendered.values()) element.remove();
    this.rendered.clear();
    this.heights = [];
    this.offsetsValidUpTo = 0;
    this.count = 0;
    this.stickToBottom = true;
    this.setCount(count);
    this.viewport.scrollTop = 0;
    this.lastScrollTop = 0;
  }

  setCount(count: number): void {
    const estimate = this.options.estimatedHeight ?? 44;
    for (let i = this.count; i < count; i += 1) this.heights[i] = estimate;
    this.heights.length = count;
    this.count = count;
    this.offsetsValidUpTo = Math.min(this.offsetsValidUpTo, count);
    this.schedule();
  }

  /** A row's content or height changed (finished tool, expanded output). */
  invalidate(index: number): void {
    const entry = this.rendered.get(index);
    if (entry) entry.version = '';
    this.schedule();
  }

  /** A rendered row changed height by itself (details toggled): measure again, keep its DOM. */
  remeasure(): void {
    this.schedule();
  }

  scrollToBottom(): void {
    this.stickToBottom = true;
    this.schedule();
  }

  /** Renders synchronously (tests and first paint). */
  flush(): void {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.render();
  }

  private schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  /** The rendered row that follows `index`, so rows sit in the DOM (and the Tab order) in list order. */
  private nextRendered(index: number): HTMLElement | null {
    let best: { index: number; element: HTMLElement } | undefined;
    for (const [other, { element }] of this.rendered) {
      if (other > index && (!best || other < best.index)) best = { index: other, element };
    }
    return best?.element ?? null;
  }

  private isAtBottom(): boolean {
    const v = this.viewport;
    return v.scrollHeight - v.scrollTop - v.clientHeight < 24;
  }

  private offsetOf(index: number): number {
    if (index > this.offsetsValidUpTo) {
      for (let i = this.offsetsValidUpTo; i < index; i += 1) {
        this.offsets[i + 1] = (this.offsets[i] ?? 0) + (this.heights[i] ?? 0);
      }
      this.offsetsValidUpTo = index;
    }
    return this.offsets[index] ?? 0;
  }

  private totalHeight(): number {
    return this.offsetOf(this.count);
  }

  /** First row whose bottom is below `y` (binary search over the prefix sums). */
  private indexAt(y: number): number {
    this.offsetOf(this.count);
    let low = 0;
    let high = Math.max(0, this.count - 1);
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((this.offsets[mid] ?? 0) <= y) low = mid;
      else high = mid - 1;
    }
    return low;
  }

  private render(): void {
    // Two passes at most: the second corrects positions after newly measured heights.
    for (let pass = 0; pass < 2; pass += 1) {
      if (this.stickToBottom) {
        this.content.style.height = `${this.totalHeight()}px`;
        this.viewport.scrollTop = this.viewport.scrollHeight;
      }
      const overscan = this.options.overscanPixels ?? 600;
      const top = Math.max(0, this.viewport.scrollTop - overscan);
      const bottom = this.viewport.scrollTop + this.viewport.clientHeight + overscan;
      const first = this.count === 0 ? 0 : this.indexAt(top);
      let last = first;
      while (last < this.count && this.offsetOf(last) < bottom) last += 1;

      for (const [index, { element }] of this.rendered) {
        if (index < first || index >= last) {
          element.remove();
          this.rendered.delete(index);
        }
      }
      let changedHeight = -1;
      for (let index = first; index < last; index += 1) {
        const version = this.options.rowVersion(index);
        let entry = this.rendered.get(index);
        if (!entry || entry.version !== version) {
          const element = this.options.renderRow(index);
          element.classList.add('virtual-row');
          element.dataset.index = String(index);
          element.setAttribute('role', 'listitem');
          element.setAttribute('aria-posinset', String(index + 1));
          if (entry) entry.element.replaceWith(element);
          else this.content.insertBefore(element, this.nextRendered(index));
          entry = { element, version };
          this.rendered.set(index, entry);
        }
        const measured = entry.element.offsetHeight;
        if (measured > 0 && measured !== this.heights[index]) {
          this.heights[index] = measured;
          if (changedHeight < 0 || index < changedHeight) changedHeight = index;
        }
      }
      if (changedHeight >= 0) this.offsetsValidUpTo = Math.min(this.offsetsValidUpTo, changedHeight);
      for (const [index, { element }] of this.rendered) {
        element.setAttribute('aria-setsize', String(this.count));
        element.style.transform = `translateY(${this.offsetOf(index)}px)`;
      }
      this.content.style.height = `${this.totalHeight()}px`;
      if (changedHeight < 0) break;
    }
    if (this.stickToBottom) this.viewport.scrollTop = this.viewport.scrollHeight;
  }
}
