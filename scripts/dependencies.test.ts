import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without type declarations
import { missingDependencies } from './dependencies.mjs';

function checkout(lock: Record<string, object>, installed?: Record<string, object>): string {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-deps-'));
  writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ packages: { '': {}, ...lock } }));
  if (installed) {
    mkdirSync(join(dir, 'node_modules'));
    writeFileSync(join(dir, 'node_modules', '.package-lock.json'), JSON.stringify({ packages: installed }));
  }
  return dir;
}

describe('npm start: dependencies changed since the last install', () => {
  it('names the packages the lockfile lists that node_modules lacks (a checkout pulled after a dependency was added)', () => {
    const lock = { 'node_modules/ws': {}, 'node_modules/canonicalize': {}, 'node_modules/a/node_modules/b': {}, 'node_modules/devonly': { dev: true }, 'node_modules/opt': { optional: true }, 'node_modules/@dockhand/server': { link: true } };
    expect(missingDependencies(checkout(lock, { 'node_modules/ws': {}, 'node_modules/a/node_modules/b': {} }))).toEqual(['canonicalize']);
    expect(missingDependencies(checkout(lock, { 'node_modules/ws': {}, 'node_modules/canonicalize': {}, 'node_modules/a/node_modules/b': {} }))).toEqual([]);
    expect(missingDependencies(checkout(lock))).toEqual(['(node_modules was never installed)']);
  });
});
