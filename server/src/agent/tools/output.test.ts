import { describe, expect, it } from 'vitest';
import { capLine, capOutput } from './output';

describe('capOutput', () => {
  it('returns text within the cap unchanged', () => {
    expect(capOutput('one\ntwo\n', 8)).toEqual({ text: 'one\ntwo\n', truncated: false });
  });

  it('keeps 60 % head and 40 % tail of the cap and names the characters and lines cut', () => {
    const text = ['l1', 'l2', 'l3', 'l4', 'l5', 'l6', 'l7', 'l8'].join('\n');
    const capped = capOutput(text, 10);
    expect(capped.truncated).toBe(true);
    expect(capped.text).toBe(
      'l1\nl2\n\n[... 13 characters (4 lines) cut from the middle of this output; narrow the request to see them ...]\n7\nl8',
    );
  });
});

describe('capLine', () => {
  it('cuts a long line and says how much is left', () => {
    expect(capLine('abcdefgh', 8)).toBe('abcdefgh');
    expect(capLine('abcdefghij', 4)).toBe('abcd [... 6 more characters on this line]');
  });
});
