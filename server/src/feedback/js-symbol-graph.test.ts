import { describe, expect, it } from 'vitest';
import { buildGraph, indexSnapshot, overlayChanges } from './graph';
import { selectTests, type Selection } from './selection';

/** Selection for `edits` (path → new text) on a repo made of `files`, with no sandbox involved. */
function select(files: Record<string, string>, edits: Record<string, string>): Selection {
  const contents = new Map(Object.entries(files));
  const base = indexSnapshot({ baseSha: 'base', files: Object.keys(files), contents });
  const changes = { changed: Object.keys(edits), deleted: [], contents: new Map(Object.entries(edits)) };
  const current = overlayChanges(base, changes);
  const graph = buildGraph(current.files, current.records, current.manifests);
  const baseRecords = new Map(Object.entries(base.records));
  return selectTests(graph, { records: baseRecords, graph: () => buildGraph(new Set(base.files), baseRecords, new Map()) }, changes);
}

function selected(selection: Selection): string[] {
  expect(selection.mode, selection.reason).toBe('selected');
  return selection.mode === 'selected' ? selection.tests : [];
}

const library = {
  'src/a.ts': 'export function a() {\n  return 1;\n}\n',
  'src/b.ts': 'export function b() {\n  return 2;\n}\nexport function b2() {\n  return 3;\n}\n',
  'src/index.ts': "export { a } from './a';\nexport { b } from './b';\n",
  'src/star.ts': "export * from './a';\nexport * from './b';\n",
};
const bodyEdit = (path: 'src/a.ts' | 'src/b.ts'): Record<string, string> => ({ [path]: library[path].replace('return', 'return 40 +') });

describe('selection by name through re-exports', () => {
  it('a test importing { a } from a barrel is not selected by a change to the module behind b', () => {
    const files = {
      ...library,
      'test/a.test.ts': "import { a } from '../src/index';\nit('a', () => a());\n",
      'test/b.test.ts': "import { b } from '../src/index';\nit('b', () => b());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/b.test.ts']);
    expect(selected(select(files, bodyEdit('src/a.ts')))).toEqual(['test/a.test.ts']);
  });

  it('follows export * when the imported name passes through it', () => {
    const files = {
      ...library,
      'test/a.test.ts': "import { a } from '../src/star';\nit('a', () => a());\n",
      'test/b.test.ts': "import { b } from '../src/star';\nit('b', () => b());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/b.test.ts']);
  });

  it('a namespace import selects by member, and as a value it selects the whole module', () => {
    const files = {
      ...library,
      'test/member.test.ts': "import * as lib from '../src/star';\nit('a', () => lib.a());\n",
      'test/whole.test.ts': "import * as lib from '../src/star';\nit('all', () => Object.values(lib).forEach((f) => f()));\n",
      'test/computed.test.ts': "import * as lib from '../src/index';\nit('a', () => lib['a' + '']());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/computed.test.ts', 'test/whole.test.ts']);
    expect(selected(select(files, bodyEdit('src/a.ts')))).toEqual(['test/computed.test.ts', 'test/member.test.ts', 'test/whole.test.ts']);
  });

  it('only the changed declaration counts, and an importing module depends on what its used names use', () => {
    const files = {
      ...library,
      'src/c.ts': "import { b } from './index';\nexport function viaB() {\n  return b();\n}\nexport function plain() {\n  return 0;\n}\n",
      'test/b2.test.ts': "import { b2 } from '../src/b';\nit('b2', () => b2());\n",
      'test/via.test.ts': "import { viaB } from '../src/c';\nit('via', () => viaB());\n",
      'test/plain.test.ts': "import { plain } from '../src/c';\nit('plain', () => plain());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/via.test.ts']);
  });

  it('load-time code reaching the changed name selects every test that loads its module', () => {
    const files = {
      ...library,
      'src/setup.ts': "import { b } from './b';\nexport const ready = true;\nb();\n",
      'src/entry.ts': "import './setup';\nexport { a } from './a';\n",
      'test/a.test.ts': "import { a } from '../src/entry';\nit('a', () => a());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/a.test.ts']);
  });

  it('require, dynamic import and CommonJS modules count as the whole module', () => {
    const files = {
      ...library,
      'src/cjs.js': "const { b } = require('./b');\nmodule.exports = { run: () => b() };\n",
      'test/require.test.js': "const lib = require('../src/index');\nit('a', () => lib.a());\n",
      'test/dynamic.test.ts': "it('a', async () => (await import('../src/a')).a());\n",
      'test/cjs.test.ts': "import { run } from '../src/cjs.js';\nit('run', () => run());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/cjs.test.ts', 'test/require.test.js']);
  });

  it('a comment-only change falls back to every binding of the module', () => {
    const files = { ...library, 'test/b2.test.ts': "import { b2 } from '../src/b';\nit('b2', () => b2());\n" };
    const selection = select(files, { 'src/b.ts': `// note\n${library['src/b.ts']}` });
    expect(selected(selection)).toEqual(['test/b2.test.ts']);
    expect(selection.reason).toContain('any of its bindings');
  });
  it('a namespace re-exported by name is followed member by member (import { z }, z.core.x)', () => {
    const files = {
      ...library,
      'src/api.ts': "import * as lib from './star';\nexport { lib };\nexport * as inner from './star';\n",
      'test/a.test.ts': "import { lib } from '../src/api';\nit('a', () => lib.a());\n",
      'test/nested.test.ts': "import * as api from '../src/api';\nit('a', () => api.inner.a());\n",
      'test/b.test.ts': "import { lib } from '../src/api';\nit('b', () => lib.b());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/b.test.ts']);
  });

  it('types and references merely stored at load time do not count; calls do', () => {
    const files = {
      ...library,
      'src/table.ts': "import * as lib from './star';\nimport { b, type B } from './b';\nexport const all = { ...lib, b };\nexport const typed: B = 1 as B;\n",
      'src/calls.ts': "import { b } from './b';\nexport const value = b();\n",
      'test/table.test.ts': "import { typed } from '../src/table';\nit('t', () => typed);\n",
      'test/all.test.ts': "import { all } from '../src/table';\nit('all', () => all.a());\n",
      'test/calls.test.ts': "import '../src/calls';\nit('loads', () => 1);\n",
    };
    files['src/b.ts'] += 'export type B = number;\n';
    const edit = { 'src/b.ts': files['src/b.ts'].replace('return 2', 'return 42') };
    expect(selected(select(files, edit))).toEqual(['test/all.test.ts', 'test/calls.test.ts']);
  });

  it('a comment mentioning exports.x = does not make an ES module CommonJS', () => {
    const files = {
      ...library,
      'src/esm.ts': "// compiles to exports.default = …\nexport { a } from './a';\nexport { b } from './b';\n",
      'test/a.test.ts': "import { a } from '../src/esm';\nit('a', () => a());\n",
      'test/b.test.ts': "import { b } from '../src/esm';\nit('b', () => b());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/b.test.ts']);
  });
  it('a local that shadows a namespace import hides it only in its own scope', () => {
    const files = {
      ...library,
      'src/run.ts': "import * as lib from './star';\nexport function run() {\n  {\n    const lib = [1];\n    lib.length;\n  }\n  return lib.a();\n}\n",
      'test/run.test.ts': "import { run } from '../src/run';\nit('run', () => run());\n",
      'test/b.test.ts': "import { b } from '../src/b';\nit('b', () => b());\n",
    };
    expect(selected(select(files, bodyEdit('src/b.ts')))).toEqual(['test/b.test.ts']);
    expect(selected(select(files, bodyEdit('src/a.ts')))).toEqual(['test/run.test.ts']);
  });
});
