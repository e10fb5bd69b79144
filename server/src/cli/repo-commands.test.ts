import { describe, expect, it } from 'vitest';
import { ReadinessReport } from '@dockhand/protocol';
import { readinessLines } from './repo-commands';

const report = (extra: Record<string, unknown>) =>
  ReadinessReport.parse({
    repo: 'ini',
    sha: 'a'.repeat(40),
    ready: true,
    install: { ok: true, detail: 'installed', seconds: 30 },
    tests: { ok: true, detail: 'ran', command: 'npm test', runner: 'tap', passed: 40, failed: 0 },
    selection: { ok: true, detail: '2 test files, 3 source files' },
    ...extra,
  });

describe('repo check output', () => {
  it('says which head was checked when no --sha named the commit, and nothing more when one did', () => {
    const lines = readinessLines(report({ head: { branch: 'main', source: '/srv/git/ini' } }));
    expect(lines.at(-1)).toBe('ini at aaaaaaaaaaaa (the head of main at /srv/git/ini): READY');
    expect(readinessLines(report({})).at(-1)).toBe('ini at aaaaaaaaaaaa: READY');
  });

  it('names an install that ran once, on its own row: the environment row gives its source only', () => {
    const command = 'python3 -m venv --system-site-packages .venv && .venv/bin/pip install -q -e .';
    const environment = { repo: 'ini', install: { command, source: 'detected' }, test: { command: 'python3 -m pytest', source: 'pyproject.toml' } };
    const lines = readinessLines(report({ environment, install: { ok: true, detail: `${command} (from detected)`, seconds: 24 } })).join('\n').split('\n');
    const rowOf = (name: string) => lines.find((line) => line.startsWith(name)) ?? '';
    expect(rowOf('environment')).toMatch(/^environment\s+ok\s+install: as below \(detected\); test: python3 -m pytest \(pyproject\.toml\)$/);
    expect(rowOf('install')).toContain(command);
    expect(lines.join('\n').split(command).length - 1).toBe(1);
  });

  it('names the workflow, job and step the test command follows', () => {
    const steps = [{ name: 'npm test', command: 'npm test' }];
    const environment = {
      repo: 'ini',
      install: { command: 'npm ci', source: '.github/workflows/ci.yml › test (install steps)' },
      test: { command: 'npm test', source: '.github/workflows/ci.yml › test › "npm test" (node-version 22.x)', steps },
    };
    const row = readinessLines(report({ environment })).join('\n').split('\n').find((line) => line.startsWith('test command'));
    expect(row).toContain('npm test (tap); from .github/workflows/ci.yml › test › "npm test" (node-version 22.x)');
  });

  it("shows the environment chosen and from where: a Python repository's row names its python, requirements, install and test (it read `python ` before)", () => {
    const environment = {
      repo: 'shop',
      python: { requirements: ['requirements.txt', 'requirements-dev.txt'], source: 'requirements.txt' },
      install: { command: 'python3 -m venv --system-site-packages .venv && .venv/bin/pip install -q -r requirements.txt -r requirements-dev.txt', source: 'detected' },
      test: { command: 'python3 -m pytest', source: 'requirements.txt' },
    };
    const rowOf = (lines: string[]) => lines.join('\n').split('\n').find((line) => line.startsWith('environment')) ?? '';
    const row = rowOf(readinessLines(report({ environment })));
    expect(row).toMatch(/^environment\s+ok\s+python 3 \(the sandbox's python3\), requirements requirements\.txt, requirements-dev\.txt \(requirements\.txt\); install: python3 -m venv .* \(detected\); test: python3 -m pytest \(requirements\.txt\)$/);
    expect(rowOf(readinessLines(report({})))).toMatch(/^environment\s+-\s+not detected \(see install\)$/);
  });
});
