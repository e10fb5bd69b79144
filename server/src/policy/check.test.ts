import { EventData } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { checkPolicy, policyCheckedEvent } from './check';
import { parseUnifiedDiff } from './diff';
import { parseRepoPolicy } from './repo-policy';
import { addedFile, deletedFile, modifiedFile, renamedFile } from './testing/diffs';
import { samples } from './testing/samples';

const s = samples(3);

function rules(result: { violations: { rule: string }[] }): string[] {
  return result.violations.map((violation) => violation.rule);
}

describe('parseUnifiedDiff', () => {
  it('reads paths, change kinds and new-file line numbers', () => {
    const files = parseUnifiedDiff(
      addedFile('src/new.ts', ['a', 'b']) +
        modifiedFile('src/old.ts', ['x'], ['y', 'z'], 7) +
        deletedFile('src/gone.ts', ['q']) +
        renamedFile('src/from.ts', 'src/to.ts'),
    );
    expect(files.map((file) => [file.path, file.change])).toEqual([
      ['src/new.ts', 'added'],
      ['src/old.ts', 'modified'],
      ['src/gone.ts', 'deleted'],
      ['src/to.ts', 'renamed'],
    ]);
    expect(files[1]!.added).toEqual([
      { line: 7, text: 'y' },
      { line: 8, text: 'z' },
    ]);
    expect(files[1]!.removedCount).toBe(1);
    expect(files[3]!.oldPath).toBe('src/from.ts');
  });

  it('returns nothing for an empty diff', () => {
    expect(parseUnifiedDiff('')).toEqual([]);
  });
});

describe('checkPolicy', () => {
  it('blocks a diff with an AWS key, a GitHub token and a private key, masking every secret', () => {
    const awsKey = s.awsAccessKeyId();
    const githubToken = s.github('ghp');
    const key = s.privateKey('RSA');
    const diff =
      modifiedFile('src/config.ts', ['export const config = {};'], [
        'export const config = {',
        `  awsKeyId: '${awsKey}',`,
        `  githubToken: '${githubToken}',`,
        '};',
      ]) + addedFile('deploy/id.pem', key);
    const result = checkPolicy({ diff, allowTestEdits: false, stage: 'push' });
    expect(result.ok).toBe(false);
    expect(rules(result).sort()).toEqual(['secret:aws-access-token', 'secret:github-pat', 'secret:private-key']);
    expect(result.violations.find((v) => v.rule === 'secret:aws-access-token')).toMatchObject({ path: 'src/config.ts', line: 2 });
    expect(result.violations.find((v) => v.rule === 'secret:private-key')).toMatchObject({ path: 'deploy/id.pem', line: 1 });
    const serialized = JSON.stringify(result);
    for (const secret of [awsKey, githubToken, ...key.slice(1, -1)]) expect(serialized).not.toContain(secret);
    // The result is exactly the protocol's `policy.checked` payload.
    expect(EventData['policy.checked'].parse(policyCheckedEvent(result).data)).toEqual({
      ok: false,
      stage: 'push',
      violations: result.violations,
    });
  });

  it('blocks CI configuration edits, including renames out of and deletions of workflows', () => {
    const cases = [
      modifiedFile('.github/workflows/ci.yml', ['runs-on: ubuntu-latest'], ['runs-on: self-hosted']),
      addedFile('.gitlab-ci.yml', ['test:', '  script: make test']),
      deletedFile('Jenkinsfile', ['pipeline {}']),
      renamedFile('.github/workflows/release.yml', 'docs/release.yml'),
      addedFile('.circleci/config.yml', ['version: 2.1']),
      addedFile('services/api/Jenkinsfile', ['pipeline {}']),
    ];
    for (const diff of cases) {
      const result = checkPolicy({ diff, allowTestEdits: true, stage: 'review' });
      expect(rules(result), diff.split('\n')[0]).toEqual(['ci-config']);
    }
    expect(checkPolicy({ diff: addedFile('docs/ci.md', ['how CI works']), allowTestEdits: false, stage: 'review' }).ok).toBe(true);
  });

  it('blocks protected paths: built-in infra-as-code, the policy itself, and the repo list', () => {
    const policy = parseRepoPolicy('protectedPaths: ["db/migrations/**", "**/Dockerfile"]');
    const blocked = [
      addedFile('infra/main.tf', ['resource "x" "y" {}']),
      addedFile('modules/net/vpc.tf', ['resource "x" "y" {}']),
      modifiedFile('helm/app/values.yaml', ['replicas: 1'], ['replicas: 3']),
      modifiedFile('.dockhand/policy.yml', ['maxChangedLines: 100'], ['maxChangedLines: 100000']),
      addedFile('db/migrations/0002_add.sql', ['ALTER TABLE t ADD c int;']),
      modifiedFile('services/api/Dockerfile', ['FROM node:18'], ['FROM node:20']),
    ];
    for (const diff of blocked) {
      expect(rules(checkPolicy({ diff, policy, allowTestEdits: false, stage: 'push' })), diff.split('\n')[0]).toEqual(['protected-path']);
    }
    // Without the repo list, a Dockerfile is ordinary code (documented default).
    const dockerfile = modifiedFile('Dockerfile', ['FROM node:18'], ['FROM node:20']);
    expect(checkPolicy({ diff: dockerfile, allowTestEdits: false, stage: 'push' }).ok).toBe(true);
  });

  it('blocks edits of existing tests unless the ticket allows them; new test files are fine', () => {
    const edits = [
      modifiedFile('src/paginate.test.ts', ['expect(a).toBe(1)'], ['expect(a).toBe(2)']),
      modifiedFile('tests/test_paginate.py', ['assert a == 1'], ['assert a == 2']),
      modifiedFile('pkg/page/page_test.go', ['want := 1'], ['want := 2']),
      deletedFile('src/test/java/com/acme/PageTest.java', ['class PageTest {}']),
      modifiedFile('src/__tests__/page.js', ['x'], ['y']),
      addedFile('conftest.py', ['collect_ignore = ["tests"]']),
      modifiedFile('vitest.config.ts', ['include: ["**/*.test.ts"]'], ['include: []']),
      // The command the suite is judged by: `|| true` (or no test script) hides every failure.
      modifiedFile('package.json', ['    "test": "node --test"'], ['    "test": "node --test || true"']),
      modifiedFile('packages/api/package.json', ['    "pretest": "tsc"'], []),
      modifiedFile('package.json', ['    "test:unit": "vitest run"'], ['    "test:unit": "exit 0"']),
    ];
    for (const diff of edits) {
      const header = diff.split('\n')[0];
      expect(rules(checkPolicy({ diff, allowTestEdits: false, stage: 'push' })), header).toEqual(['test-edit']);
      expect(checkPolicy({ diff, allowTestEdits: true, stage: 'push' }).ok, header).toBe(true);
    }
    const newTest = addedFile('src/paginate.spec.ts', ['it("pages", () => {});']);
    expect(checkPolicy({ diff: newTest, allowTestEdits: false, stage: 'push' }).ok).toBe(true);
    const otherScript = modifiedFile('package.json', ['    "lint": "eslint ."'], ['    "lint": "eslint src"']);
    expect(checkPolicy({ diff: otherScript, allowTestEdits: false, stage: 'push' }).ok).toBe(true);
    const source = modifiedFile('src/paginate.ts', ['return a;'], ['return b;']);
    expect(checkPolicy({ diff: source, allowTestEdits: false, stage: 'push' }).ok).toBe(true);
  });

  it('holds the size caps (lines and files, lockfiles excluded from lines) with per-repo overrides', () => {
    const big = addedFile('src/big.ts', Array.from({ length: 801 }, (_, i) => `export const v${i} = ${i};`));
    const atCap = addedFile('src/big.ts', Array.from({ length: 800 }, (_, i) => `export const v${i} = ${i};`));
    expect(rules(checkPolicy({ diff: big, allowTestEdits: false, stage: 'push' }))).toEqual(['diff-size:lines']);
    expect(checkPolicy({ diff: atCap, allowTestEdits: false, stage: 'push' }).ok).toBe(true);

    const lock = addedFile('package-lock.json', Array.from({ length: 5000 }, (_, i) => `"v${i}": "1.0.${i}",`));
    const withLock = checkPolicy({ diff: atCap + lock, allowTestEdits: false, stage: 'push' });
    expect(withLock.ok).toBe(true);
    expect(withLock.stats).toEqual({ changedFiles: 2, changedLines: 800 });

    const policy = parseRepoPolicy('maxChangedLines: 10\nmaxChangedFiles: 2');
    const three = ['a', 'b', 'c'].map((name) => addedFile(`src/${name}.ts`, ['x'])).join('');
    expect(rules(checkPolicy({ diff: three, policy, allowTestEdits: false, stage: 'push' }))).toEqual(['diff-size:files']);
    const eleven = addedFile('src/a.ts', Array.from({ length: 11 }, () => 'x'));
    expect(rules(checkPolicy({ diff: eleven, policy, allowTestEdits: false, stage: 'push' }))).toEqual(['diff-size:lines']);
  });

  it('flags key store files by name', () => {
    const diff = ['diff --git a/certs/client.p12 b/certs/client.p12', 'new file mode 100644', 'index 0000000..1234567', 'Binary files /dev/null and b/certs/client.p12 differ', ''].join('\n');
    expect(rules(checkPolicy({ diff, allowTestEdits: false, stage: 'push' }))).toEqual(['secret:private-key-file']);
  });

  it('fails closed on a diff it cannot read', () => {
    const truncated = modifiedFile('src/a.ts', ['a', 'b'], ['c']).replace('@@ -1,2 +1,1 @@', '@@ -1,5 +1,5 @@');
    expect(rules(checkPolicy({ diff: truncated, allowTestEdits: false, stage: 'push' }))).toEqual(['diff-unparseable']);
    expect(rules(checkPolicy({ diff: 'not a diff at all\n', allowTestEdits: false, stage: 'push' }))).toEqual(['diff-unparseable']);
  });

  it('sees CI edits hidden behind quoted (non-ASCII) paths', () => {
    const diff = [
      'diff --git "a/.github/workflows/\\303\\251.yml" "b/.github/workflows/\\303\\251.yml"',
      'new file mode 100644',
      '--- /dev/null',
      '+++ "b/.github/workflows/\\303\\251.yml"',
      '@@ -0,0 +1 @@',
      '+on: push',
      '',
    ].join('\n');
    expect(checkPolicy({ diff, allowTestEdits: false, stage: 'push' }).violations).toEqual([
      expect.objectContaining({ rule: 'ci-config', path: '.github/workflows/é.yml' }),
    ]);
  });

  it('passes a clean diff', () => {
    const diff = modifiedFile('src/paginate.ts', ['  return items.slice(start, start + size - 1);'], ['  return items.slice(start, start + size);'], 12);
    expect(checkPolicy({ diff, allowTestEdits: false, stage: 'review' })).toEqual({
      ok: true,
      stage: 'review',
      violations: [],
      stats: { changedFiles: 1, changedLines: 2 },
    });
  });
});
