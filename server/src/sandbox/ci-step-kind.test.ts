import { describe, expect, it } from 'vitest';
import { classify, isGlobalInstall, runsTestCommand, runsTests } from './ci-step-kind';

/* What one CI run step is, on lines taken from the census's workflows (lukeed/clsx, unjs/ufo, agronholm/anyio). */

describe('classify', () => {
  it('a coverage report or upload is set-up; a coverage threshold is a check that runs no test', () => {
    expect(classify('c8 report --reporter=text-lcov > coverage.lcov', '(coverage) Report')).toBe('setup');
    expect(classify('npx nyc report --reporter=lcov', 'Report')).toBe('setup');
    expect(classify('coverage xml', 'Generate coverage report')).toBe('setup');
    expect(classify('coverage combine\ncoverage report', 'Combine')).toBe('setup');
    expect(classify('coverage report --fail-under=100', 'Coverage')).toBe('check');
    expect(runsTests('coverage report --fail-under=100', 'Coverage')).toBe(false);
    expect(runsTests('c8 check-coverage --lines 100', 'Check coverage')).toBe(false);
    expect(runsTests('c8 --include=src npm test', '(coverage) Test')).toBe(true);
  });

  it('a global npm install of a tool is an install; one of package managers only is set-up', () => {
    expect(classify('npm install -g c8', '(coverage) Install')).toBe('install');
    expect(isGlobalInstall('npm install -g c8')).toBe(true);
    expect(isGlobalInstall('npm i c8 --global')).toBe(true);
    expect(classify('npm i -g pnpm@8', 'Install pnpm')).toBe('setup');
    expect(classify('npm i -fg corepack && corepack enable', '')).toBe('setup');
    expect(isGlobalInstall('npm install && npm i -g pnpm')).toBe(false);
    expect(isGlobalInstall('npm ci')).toBe(false);
  });
});

describe('install, lint and build steps are no test steps (#32)', () => {
  // GitHub's own "Python application" starter workflow, as repositories keep it.
  const templateInstall = 'python -m pip install --upgrade pip\npip install flake8 pytest\nif [ -f requirements.txt ]; then pip install -r requirements.txt; fi';

  it("the starter workflow's install step is an install, whatever runner it installs", () => {
    expect(classify(templateInstall, 'Install dependencies')).toBe('install');
    expect(classify('pip install tox tox-gh-actions', 'Install dependencies')).toBe('install');
  });

  it('a lint, format, type-check or build line is a check that runs no test, whatever paths it names', () => {
    expect(runsTests('flake8 . --count --select=E9,F63,F7,F82 --show-source --statistics\nflake8 src tests --count --exit-zero', 'Lint with flake8')).toBe(false);
    expect(runsTests('eslint lib test', 'eslint')).toBe(false);
    expect(runsTests('mypy src tests', 'mypy')).toBe(false);
    expect(runsTests('npx tsc -p test', 'Type check')).toBe(false);
    expect(runsTests('npm run build', 'Build')).toBe(false);
    expect(runsTests('tox -e lint,mypy', 'Run lint')).toBe(false);
    expect(runsTests('python -m tox -e flake8', 'tox flake8')).toBe(false);
    expect(runsTests('nox -s format', 'Format')).toBe(false);
    expect(runsTestCommand('flake8 tests')).toBe(false);
    // A chain still runs its tests; a tox run of a test env is a test step.
    expect(runsTests('npm run lint && npm test', 'Check')).toBe(true);
    expect(runsTests('tsc -p test && node --test', '')).toBe(true);
    expect(runsTests('tox -e py311,lint', 'Run tox')).toBe(true);
    expect(runsTests('tox', 'Run tox')).toBe(true);
    expect(runsTests('pytest tests', 'Test with pytest')).toBe(true);
    expect(runsTestCommand('pip install flake8 pytest')).toBe(false);
  });
});
