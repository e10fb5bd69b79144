import { describe, expect, it } from 'vitest';
import { HeadAndTail } from './head-and-tail';

function strings(head: number, tail: number): HeadAndTail<string> {
  return new HeadAndTail<string>({ head, tail, slice: (chunk, start, end) => chunk.slice(start, end) });
}

describe('HeadAndTail', () => {
  it('keeps everything that fits, split between head and tail', () => {
    const kept = strings(3, 4);
    for (const chunk of ['ab', 'cde', '', 'fg']) kept.push(chunk);
    expect(kept.dropped).toBe(0);
    expect(kept.head.join('') + kept.tail.join('')).toBe('abcdefg');
  });

  it('keeps the first and last units of any chunking and counts the cut middle', () => {
    const text = 'the quick brown fox jumps over the lazy dog';
    for (const size of [1, 2, 5, 7, text.length]) {
      const kept = strings(4, 5);
      for (let index = 0; index < text.length; index += size) kept.push(text.slice(index, index + size));
      expect(kept.head.join('')).toBe('the ');
      expect(kept.tail.join('')).toBe('y dog');
      expect(kept.dropped).toBe(text.length - 9);
    }
  });

  it('counts bytes for buffers: a multi-byte character is cut, not kept whole', () => {
    const kept = new HeadAndTail<Buffer>({ head: 1, tail: 1, slice: (chunk, start, end) => chunk.subarray(start, end) });
    kept.push(Buffer.from('éé'));
    expect(Buffer.concat(kept.head)).toEqual(Buffer.from([0xc3]));
    expect(Buffer.concat(kept.tail)).toEqual(Buffer.from([0xa9]));
    expect(kept.dropped).toBe(2);
  });

  it('keeps only the tail when the head is 0, and nothing when both are', () => {
    const tailOnly = strings(0, 3);
    tailOnly.push('abcdef');
    expect([tailOnly.head.join(''), tailOnly.tail.join(''), tailOnly.dropped]).toEqual(['', 'def', 3]);
    const none = strings(0, 0);
    none.push('abc');
    expect([none.head.join(''), none.tail.join(''), none.dropped]).toEqual(['', '', 3]);
  });
});
