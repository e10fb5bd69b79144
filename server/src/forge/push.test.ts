import { describe, expect, it } from 'vitest';
import { cleanMessage } from './push';

describe('cleanMessage (what `git commit -F` would store, for `git commit-tree`)', () => {
  it('drops trailing white space and outer blank lines, makes runs of blank lines one, ends with a newline', () => {
    expect(cleanMessage('\n\nFix average()  \n\n\n\nBody line\t\n\nCo-authored-by: a <a@b>\n\n')).toBe('Fix average()\n\nBody line\n\nCo-authored-by: a <a@b>\n');
    expect(cleanMessage('one line')).toBe('one line\n');
  });
});
