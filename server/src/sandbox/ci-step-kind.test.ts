import { describe, expect, it } from 'vitest';
import { classify, isGlobalInstall, runsTests } from './ci-step-kind';

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
