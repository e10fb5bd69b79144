import type { CiStep } from './ci-workflow';

/*
 * A CI test step `make <target>` whose recipe installs before it tests (census
 * more-itertools/more-itertools: `make coverage` = `python -m pip install --upgrade -r
 * requirements/testing.txt`, then `coverage run … -m unittest`, `coverage report …`). The test run
 * has no network, so the pip line failed there (exit 2) and the verdict was "no test passes at
 * the base". The target's pip install lines are install steps: they run in the build (what pip
 * cannot get comes from Debian or is named, python-requirements.ts), and the target's other lines
 * are the test steps, as written. Pure; a target make would expand (`$`, `@`-less includes of
 * other targets are kept) or that installs nothing stays as written.
 */

export interface MakeTarget {
  target: string;
  /** The target's pip install lines, as written. */
  installs: string[];
  steps: CiStep[];
}

/** The recipe lines of `target` in a Makefile's text (tab-indented lines after `target:`). */
function recipeLines(makefile: string, target: string): string[] | undefined {
  const lines = makefile.split('\n');
  const header = lines.findIndex((line) => new RegExp(`^${target.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}\\s*:(?!=)([^=]|$)`).test(line));
  if (header < 0) return undefined;
  // Prerequisites run first; a target with any is not taken apart.
  if ((lines[header] ?? '').split(':').slice(1).join(':').trim() !== '') return undefined;
  const out: string[] = [];
  for (const line of lines.slice(header + 1)) {
    if (!line.startsWith('\t')) {
      if (line.trim() === '' || line.trim().startsWith('#')) continue;
      break;
    }
    out.push(line.slice(1).trim());
  }
  return out;
}

const PIP_INSTALL = /^(?:python3?\s+-m\s+)?pip3?\s+install\s/;

export function makeTarget(command: string, makefile: string | undefined): MakeTarget | undefined {
  const target = /^make\s+([\w.-]+)\s*$/.exec(command.trim())?.[1];
  if (!target || makefile === undefined) return undefined;
  const lines = recipeLines(makefile, target);
  if (!lines || lines.length === 0 || lines.some((line) => line.includes('$') || line.endsWith('\\'))) return undefined;
  const bare = lines.map((line) => line.replace(/^[@-]+/, ''));
  const installs = bare.filter((line) => PIP_INSTALL.test(line));
  const tests = bare.filter((line) => !PIP_INSTALL.test(line));
  if (installs.length === 0 || tests.length === 0) return undefined;
  return { target, installs, steps: tests.map((line) => ({ name: `make ${target}`, command: line })) };
}

/** A pip install line's requirements and `-r` files, for python-requirements.ts (flags dropped). */
export function pipArguments(line: string): string[] {
  const words = line.replace(PIP_INSTALL, '').split(/\s+/).filter(Boolean);
  const out: string[] = [];
  for (let index = 0; index < words.length; index++) {
    const word = words[index] ?? '';
    if (word === '-r' || word === '--requirement') out.push('-r', words[++index] ?? '');
    else if (!word.startsWith('-')) out.push(word);
  }
  return out;
}
