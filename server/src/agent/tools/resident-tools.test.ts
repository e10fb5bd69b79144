import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../../../../test/support/fixture-repo';
import { toolContext } from '../testing/context';
import { HostSandbox } from '../../sandbox/testing/host-sandbox';
import { ResidentHostSandbox } from '../../sandbox/testing/resident-host-sandbox';
import type { Sandbox } from '../../sandbox/types';
import { defaultTools, executeTool } from './index';

/*
 * The tools through a sandbox's resident paths (line slices, resident search and ctags) give the
 * model what they give through a process per call: same text, file blocks in any order.
 */
const tools = defaultTools();
let repo: FixtureRepo;
let plain: HostSandbox;
let resident: ResidentHostSandbox;

async function run(sandbox: Sandbox, name: string, input: unknown): Promise<string> {
  const result = await executeTool(tools, name, input, toolContext(plain, { sandbox }), 20_000);
  return `${result.isError ? 'ERROR ' : ''}${result.output}`;
}

/** Search output with its file blocks sorted (ripgrep's file order varies from run to run). */
function blocksSorted(output: string): string {
  const [header, ...blocks] = output.split('\n\n');
  return [header, ...blocks.sort()].join('\n\n');
}

beforeAll(async () => {
  repo = createFixtureRepo('buggy-calc');
  mkdirSync(join(repo.path, 'src/more'), { recursive: true });
  writeFileSync(join(repo.path, 'src/more/ops.js'), 'export function add(a, b) {\n  return a + b;\n}\nexport const PI = 3.14;\n// add again\n');
  writeFileSync(join(repo.path, 'src/long.txt'), `${Array.from({ length: 600 }, (_, index) => `line ${index + 1}`).join('\n')}\n${'z'.repeat(1500)}\n`);
  plain = new HostSandbox(repo.path, repo.sha);
  resident = await ResidentHostSandbox.open(repo.path);
});

afterAll(async () => {
  await resident?.destroy();
});

describe('tools through the resident paths', () => {
  it.each([
    [{ pattern: 'add' }],
    [{ pattern: 'function \\w+\\(', context_lines: 1 }],
    [{ pattern: 'ADD', case_insensitive: true, glob: '*.js' }],
    [{ pattern: 'a + b', fixed_strings: true, path: 'src' }],
    [{ pattern: 'line \\d+', max_results: 5 }],
    [{ pattern: 'no such text anywhere' }],
  ])('search %j answers as ripgrep does', async (input) => {
    const declinedBefore = resident.declined.length;
    expect(blocksSorted(await run(resident, 'search', input))).toBe(blocksSorted(await run(plain, 'search', input)));
    expect(resident.declined.slice(declinedBefore)).toEqual([]);
  });

  it.each([
    [{ path: 'src/long.txt', start_line: 590, end_line: 610 }],
    [{ path: 'src/long.txt' }],
    [{ path: 'src/more/ops.js', start_line: 2 }],
    [{ path: 'src/more/ops.js', start_line: 99 }],
  ])('read_file %j shows what it shows from the whole file', async (input) => {
    expect(await run(resident, 'read_file', input)).toBe(await run(plain, 'read_file', input));
  });

  it.each([[{ path: 'src/more/ops.js' }], [{ name: 'add' }], [{ name: 'PI' }], [{ name: 'nothingLikeThis' }], [{ path: 'src/more' }]])(
    'list_symbols %j lists what ctags lists',
    async (input) => {
      expect(await run(resident, 'list_symbols', input)).toBe(await run(plain, 'list_symbols', input));
    },
  );
});
