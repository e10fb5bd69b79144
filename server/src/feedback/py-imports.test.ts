import { describe, expect, it } from 'vitest';
import { isPyTestFile, parsePython, PyResolver } from './py-imports';

describe('parsePython', () => {
  it('reads plain, from, relative, aliased and parenthesised multi-line imports', () => {
    const parsed = parsePython(
      ['import os, pkg.sub as s', 'from . import sibling', 'from ..core import (', '    alpha,', '    beta as b,', ')', 'def f():', '    import lazy.mod', '    return alpha()'].join('\n'),
    );
    expect(parsed.imports).toEqual([
      { module: 'os', level: 0, names: [] },
      { module: 'pkg.sub', level: 0, names: [] },
      { module: '', level: 1, names: ['sibling'] },
      { module: 'core', level: 2, names: ['alpha', 'beta'] },
      { module: 'lazy.mod', level: 0, names: [] },
    ]);
  });

  it('collects top-level names, usage words (not __all__) and import-time statements', () => {
    const parsed = parsePython(['RATE = 2', '__all__ = [', '  "shout",', ']', 'def shout(x):', '    return helper(x) * RATE', 'class Box:', '    size = 1'].join('\n'));
    expect(parsed.defined).toEqual(expect.arrayContaining(['RATE', 'shout', 'Box']));
    expect(parsed.defined).not.toContain('size');
    expect(parsed.words).toEqual(expect.arrayContaining(['helper', 'RATE']));
    expect(parsed.words).not.toContain('__all__');
    expect(parsed.topLevel).toEqual(['RATE = 2']);
  });
});

describe('parsePython names for hub pruning', () => {
  it('does not count module aliases as definitions, nor docstring prose as usage', () => {
    const parsed = parsePython(
      [
        '"""Cliques and cycles, in prose."""',
        'import networkx as nx',
        'from .util import helper',
        'def f(G):',
        '    """Uses clique_removal',
        '    in prose."""',
        '    return nx.cycles.find(helper(G))',
      ].join('\n'),
    );
    expect(parsed.defined).toEqual(expect.arrayContaining(['f', 'helper']));
    expect(parsed.defined).not.toContain('nx');
    expect(parsed.words).not.toContain('clique_removal');
    expect(parsed.words).not.toContain('Cliques');
    expect(parsed.attributes).toEqual(expect.arrayContaining(['cycles', 'find']));
  });

  it('counts words inside strings only where the file looks names up dynamically', () => {
    const filter = parsePython('import warnings\nwarnings.filterwarnings("ignore", message="betweenness_source")\n');
    expect(filter.words).not.toContain('betweenness_source');
    const lookup = parsePython('import networkx as nx\nfn = getattr(nx, "betweenness_source")\n');
    expect(lookup.words).toContain('betweenness_source');
  });

  it('records names taken by from-imports and star imports (how code reaches through a package)', () => {
    const parsed = parsePython('from networkx.utils import pairwise as pw\ndef f():\n    from pkg import *\n    sigma = 1\n    return pw(sigma)\n');
    expect(parsed.imported).toEqual(['pairwise']);
    expect(parsed.starImport).toBe(true);
    expect(parsed.attributes).not.toContain('sigma');
  });

  it('with __all__, re-exports exactly what it lists (plus its own definitions)', () => {
    const parsed = parsePython(['from .util import helper, other', '__all__ = ["f", "helper"]', 'def f():', '    return helper()'].join('\n'));
    expect(parsed.defined.sort()).toEqual(['f', 'helper']);
  });
});

describe('PyResolver', () => {
  const files = new Set(['pkg/__init__.py', 'pkg/core.py', 'pkg/sub/__init__.py', 'pkg/sub/leaf.py', 'src/other/__init__.py', 'src/other/x.py', 'tests/helper.py', 'tests/test_a.py']);
  const resolver = new PyResolver(files);

  it('resolves absolute imports with their package __init__ chain', () => {
    expect(resolver.resolve('tests/test_a.py', { module: 'pkg.sub.leaf', level: 0, names: [] })).toEqual([
      { file: 'pkg/__init__.py', hub: true },
      { file: 'pkg/sub/__init__.py', hub: true },
      { file: 'pkg/sub/leaf.py', hub: false },
    ]);
  });

  it('resolves `from pkg import submodule`, relative imports, src layout and test-dir siblings', () => {
    expect(resolver.resolve('tests/test_a.py', { module: 'pkg', level: 0, names: ['core'] })).toEqual([
      { file: 'pkg/__init__.py', hub: true },
      { file: 'pkg/core.py', hub: false },
    ]);
    expect(resolver.resolve('pkg/sub/leaf.py', { module: 'core', level: 2, names: ['x'] })).toEqual([{ file: 'pkg/core.py', hub: false }]);
    expect(resolver.resolve('tests/test_a.py', { module: 'other.x', level: 0, names: [] }).map((t) => t.file)).toEqual(['src/other/__init__.py', 'src/other/x.py']);
    expect(resolver.resolve('tests/test_a.py', { module: 'helper', level: 0, names: [] })).toEqual([{ file: 'tests/helper.py', hub: false }]);
    expect(resolver.resolve('tests/test_a.py', { module: 'numpy', level: 0, names: [] })).toEqual([]);
  });

  it('knows pytest file conventions', () => {
    expect(isPyTestFile('a/test_x.py')).toBe(true);
    expect(isPyTestFile('a/x_test.py')).toBe(true);
    expect(isPyTestFile('a/conftest.py')).toBe(false);
    expect(isPyTestFile('a/testing.py')).toBe(false);
  });
});
