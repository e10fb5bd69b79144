import { createRequire } from 'node:module';
import type TypeScript from 'typescript';

/*
 * The TypeScript compiler, loaded on the first parse instead of at import: it is ~9 MB of
 * JavaScript and took 1.7 s to load, two thirds of `dockhand serve`'s start-up, for a server that
 * may parse nothing until its first task. Types come from `import type ts from 'typescript'`.
 */
const load = createRequire(import.meta.url);
let compiler: typeof TypeScript | undefined;

export function typescript(): typeof TypeScript {
  if (compiler) return compiler;
  const loaded: typeof TypeScript = load('typescript');
  compiler = loaded;
  return loaded;
}
