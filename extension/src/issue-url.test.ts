import { describe, expect, it } from 'vitest';
import { issueUrlShape, matchIssueUrl, repositoryPage } from './issue-url';

const local = [{ id: '1', title: 'average() ignores the first value', body: '', labels: [], url: 'dockhand-local://buggy-calc/issues/1' }];
const github = [{ id: '42', title: 'paginate() skips', body: '', labels: [], url: 'https://github.com/acme/app/issues/42' }];
const noUrls = [{ id: '1', title: 'average() ignores the first value', body: '', labels: [] }];

describe('issue URLs', () => {
  it("takes the local forge's own issue URL (dockhand-local://…/issues/N) when origin is a path", () => {
    expect(issueUrlShape('dockhand-local://buggy-calc/issues/1')).toBeUndefined();
    const match = matchIssueUrl('dockhand-local://buggy-calc/issues/1', local, '/srv/upstream/buggy-calc.git', 'buggy-calc');
    expect(match).toEqual({ ticket: { ...local[0], url: 'dockhand-local://buggy-calc/issues/1' } });
  });

  it("refuses another repository's issue when the window's repository has no web page, naming both", () => {
    const match = matchIssueUrl('https://github.com/other/thing/issues/1', local, '/srv/upstream/buggy-calc.git', 'buggy-calc');
    expect(match).toEqual({ problem: expect.stringContaining('That is an issue of github.com/other/thing, not of buggy-calc (dockhand-local://buggy-calc)') });
    // Nothing names the repository (no issue URL, origin a path): the local forge's form of its name is still compared.
    const bare = matchIssueUrl('https://github.com/other/thing/issues/1', noUrls, '/srv/upstream/buggy-calc.git', 'buggy-calc');
    expect(bare).toEqual({ problem: expect.stringContaining('not of buggy-calc (dockhand-local://buggy-calc)') });
    expect(matchIssueUrl('dockhand-local://other/issues/1', local, '', 'buggy-calc')).toEqual({ problem: expect.stringContaining('That is an issue of dockhand-local://other, not of buggy-calc') });
  });

  it("takes an issue of the window's repository on GitHub and refuses another owner, name or host", () => {
    expect(matchIssueUrl('https://github.com/Acme/App/issues/42/', github, 'git@github.com:acme/app.git', 'app')).toMatchObject({ ticket: { id: '42' } });
    for (const url of ['https://github.com/acme/other/issues/42', 'https://github.com/evil/app/issues/42', 'https://gitlab.com/acme/app/issues/42', 'dockhand-local://app/issues/42']) {
      expect(matchIssueUrl(url, github, 'git@github.com:acme/app.git', 'app'), url).toEqual({ problem: expect.stringMatching(/^That is an issue of .+, not of app \(github\.com\/acme\/app\)/) });
    }
  });

  it('refuses an unknown number and a URL of another shape', () => {
    expect(matchIssueUrl('dockhand-local://buggy-calc/issues/9', local, '', 'buggy-calc')).toEqual({ problem: expect.stringContaining('#9 is not an open issue of buggy-calc') });
    expect(issueUrlShape('https://github.com/acme/app/pull/4')).toMatch(/ending in \/issues\/<number>/);
    expect(repositoryPage('/srv/upstream/buggy-calc.git')).toBeUndefined();
    expect(repositoryPage('dockhand-local://Buggy-Calc')).toBe('dockhand-local://buggy-calc');
  });
});
