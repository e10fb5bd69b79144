import { describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import { FileDecisions } from './file-decisions';

describe('FileDecisions (accept per file)', () => {
  it('holds the files left out per task, tells listeners, and forgets them once the review went out', () => {
    const decisions = new FileDecisions();
    const fired: string[] = [];
    decisions.onDidChange((taskId) => fired.push(taskId));
    decisions.set('t1', 'src/b.js', false);
    decisions.set('t1', 'src/a.js', false);
    decisions.set('t1', 'src/a.js', false);
    decisions.set('t2', 'x', true);
    expect(decisions.rejected('t1')).toEqual(['src/a.js', 'src/b.js']);
    expect(decisions.isAccepted('t1', 'src/b.js')).toBe(false);
    expect(decisions.isAccepted('t2', 'x')).toBe(true);
    // Only real changes fire.
    expect(fired).toEqual(['t1', 't1']);
    // A file no longer in the diff is not sent.
    expect(decisions.rejected('t1', ['src/b.js', 'src/c.js'])).toEqual(['src/b.js']);
    decisions.set('t1', 'src/a.js', true);
    expect(decisions.rejected('t1')).toEqual(['src/b.js']);
    decisions.clear('t1');
    expect(decisions.rejected('t1')).toEqual([]);
    expect(fired).toEqual(['t1', 't1', 't1', 't1']);
  });
});
