import { describe, expect, it } from 'vitest';
import { exportTargets, isJsTestFile, JsResolver, parseJsImports, parseJsModule } from './js-imports';

describe('parseJsImports', () => {
  it('sees static, re-export, type, require and literal dynamic imports', () => {
    const text = `
      import a from './a';
      import type { T } from './types';
      export { b } from './b.js';
      export * from '@scope/pkg/sub';
      const c = require('./c');
      async function later() { return import('./d'); }
      const computed = require(name);
    `;
    expect(parseJsImports(text).sort()).toEqual(['./a', './b.js', './c', './d', './types', '@scope/pkg/sub'].sort());
  });
});

describe('parseJsModule', () => {
  it('collects import-time statements and per-declaration symbols', () => {
    const parsed = parseJsModule('src/x.ts', `import { y } from './y';\nexport function alpha() { return y(); }\nexport const beta = () => 1;\nconst table = build();\n`);
    expect(parsed.topLevel).toContain('function alpha');
    expect(parsed.symbols.declarations.map((declaration) => declaration.name).sort()).toEqual(['alpha', 'beta', 'table']);
    expect(parsed.hub).toBe(false);
  });

  it('treats index files and re-export modules as barrels', () => {
    expect(parseJsModule('src/index.ts', `export * from './a';`).hub).toBe(true);
    expect(parseJsModule('src/all.ts', `export * from './a';\nexport { b } from './b';`).hub).toBe(true);
  });

  it('keeps a function body edit out of the import-time statements', () => {
    const before = parseJsModule('m.js', 'export function f() { return 1; }\nconst x = 2;');
    const after = parseJsModule('m.js', 'export function f() { return 3; }\nconst x = 2;');
    const changedTop = parseJsModule('m.js', 'export function f() { return 1; }\nconst x = 5;');
    expect(after.topLevel).toEqual(before.topLevel);
    expect(changedTop.topLevel).not.toEqual(before.topLevel);
  });
});

describe('JsResolver', () => {
  const files = new Set([
    'src/a.ts',
    'src/lib/index.ts',
    'src/util/clamp.js',
    'packages/core/package.json',
    'packages/core/src/index.ts',
    'packages/core/src/extra.ts',
    'package.json',
    'tsconfig.json',
    'src/app.ts',
  ]);
  const contents = new Map([
    ['package.json', JSON.stringify({ name: 'app', imports: { '#util/*': './src/util/*.js' } })],
    ['tsconfig.json', `{ // comments are allowed\n "compilerOptions": { "baseUrl": ".", "paths": { "@lib/*": ["src/lib/*"] } } }`],
    [
      'packages/core/package.json',
      JSON.stringify({ name: '@acme/core', exports: { '.': { import: './dist/index.js', types: './dist/index.d.ts' }, './extra': './src/extra.ts' } }),
    ],
  ]);
  const resolver = new JsResolver(files, contents);

  it('maps ESM .js specifiers back to .ts sources and finds index files', () => {
    expect(resolver.resolve('src/app.ts', './a.js')).toEqual(['src/a.ts']);
    expect(resolver.resolve('src/app.ts', './lib')).toEqual(['src/lib/index.ts']);
  });

  it('follows tsconfig paths, package imports and workspace package exports', () => {
    expect(resolver.resolve('src/app.ts', '@lib/index')).toEqual(['src/lib/index.ts']);
    expect(resolver.resolve('src/app.ts', '#util/clamp')).toEqual(['src/util/clamp.js']);
    expect(resolver.resolve('src/app.ts', '@acme/core')).toEqual(['packages/core/src/index.ts']);
    expect(resolver.resolve('src/app.ts', '@acme/core/extra')).toEqual(['packages/core/src/extra.ts']);
  });

  it('resolves built-ins and external packages to nothing', () => {
    expect(resolver.resolve('src/app.ts', 'node:fs')).toEqual([]);
    expect(resolver.resolve('src/app.ts', 'react')).toEqual([]);
  });

  it('keeps every condition of an exports map', () => {
    expect(exportTargets({ '.': { import: './a.mjs', require: './a.cjs' } }, '.').sort()).toEqual(['./a.cjs', './a.mjs']);
    expect(exportTargets({ './feature/*': './src/feature/*.js' }, './feature/x')).toEqual(['./src/feature/x.js']);
  });
});

describe('isJsTestFile', () => {
  it('follows vitest/jest/mocha/node conventions and leaves helpers out', () => {
    expect(isJsTestFile('src/a.test.ts')).toBe(true);
    expect(isJsTestFile('src/a.spec.js')).toBe(true);
    expect(isJsTestFile('src/__tests__/a.ts')).toBe(true);
    expect(isJsTestFile('test/a.js')).toBe(true);
    expect(isJsTestFile('test/helpers/lines.js')).toBe(false);
    expect(isJsTestFile('test/fixtures/app.js')).toBe(false);
    expect(isJsTestFile('src/a.ts')).toBe(false);
    expect(isJsTestFile('src/a.test.d.ts')).toBe(false);
  });
});
