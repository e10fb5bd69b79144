import type { CiStep } from './ci-workflow';

/*
 * A CI step that runs tox (`tox`, `tox -e py313`, `python -m tox`), read through tox.ini: tox
 * makes a virtualenv per environment and pip-installs its `deps` from a package index when it
 * runs, which the sandbox has only when DOCKHAND_PIP_INDEX_URL is set (census: python-dotenv,
 * arrow, marshmallow ran `tox`; tox-gh-actions, the plugin their CI installs to pick the
 * environment, is not even in Debian). The environment the CI would run on the sandbox's Python
 * is taken instead: its `deps` and `extras` installed into the build's .venv, its `commands` as the
 * test steps, as written (each its own step, in `changedir`, with `setenv`). Pure.
 */

export interface ToxEnvironment {
  /** The tox environment followed, e.g. `py311`. */
  name: string;
  /** `deps` as pip arguments (`pytest`, `-r requirements/tests.txt`). */
  deps: string[];
  extras: string[];
  /** `skip_install` / `skipsdist`: the project itself is not installed. */
  skipInstall: boolean;
  steps: CiStep[];
}

type Sections = Map<string, Map<string, string>>;

/** tox.ini's sections and keys; a key's continuation lines (indented) are joined with `\n`. */
export function parseIni(text: string): Sections {
  const sections: Sections = new Map();
  let section: Map<string, string> | undefined;
  let key: string | undefined;
  for (const raw of text.split('\n')) {
    if (/^\s*[#;]/.test(raw) || raw.trim() === '') continue;
    const header = /^\[([^\]]+)\]\s*$/.exec(raw);
    if (header) {
      section = new Map();
      sections.set((header[1] ?? '').trim(), section);
      key = undefined;
      continue;
    }
    if (!section) continue;
    if (/^\s/.test(raw) && key !== undefined) {
      section.set(key, `${section.get(key) ?? ''}\n${raw.trim()}`);
      continue;
    }
    const pair = /^([^=]+?)\s*=\s*(.*)$/.exec(raw);
    if (!pair) continue;
    key = (pair[1] ?? '').trim();
    section.set(key, (pair[2] ?? '').trim());
  }
  return sections;
}

/** `py{310,311}-django{4,5}` → py310-django4, py310-django5, …; also comma lists. */
export function expandNames(value: string): string[] {
  const out: string[] = [];
  for (const part of splitTopLevel(value)) {
    const brace = /\{([^{}]*)\}/.exec(part);
    if (!brace) {
      if (part.trim()) out.push(part.trim());
      continue;
    }
    for (const choice of (brace[1] ?? '').split(',')) out.push(...expandNames(part.slice(0, brace.index) + choice.trim() + part.slice(brace.index + brace[0].length)));
  }
  return out;
}

/** Splits on commas and newlines outside braces. */
function splitTopLevel(value: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of value) {
    if (char === '{') depth++;
    if (char === '}') depth--;
    if ((char === ',' || char === '\n') && depth === 0) {
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  return parts;
}

/** A line's value for `env`: `py{310,311}: ipython` only where a factor condition holds; undefined where it does not. */
function conditional(line: string, env: string): string | undefined {
  const match = /^([\w{},.!-]+):\s+(.*)$/.exec(line);
  if (!match || /^(https?|file|git\+\w+)$/.test(match[1] ?? '')) return line;
  const factors = new Set(env.split('-'));
  const holds = expandNames(match[1] ?? '').some((alternative) => alternative.split('-').every((factor) => (factor.startsWith('!') ? !factors.has(factor.slice(1)) : factors.has(factor))));
  return holds ? (match[2] ?? '') : undefined;
}

/** The environment the CI step runs on the sandbox's Python, or undefined when tox.ini does not say. */
function chosenEnvironment(sections: Sections, command: string, python: string): string | undefined {
  const named = /(?:^|\s)-e\s*=?\s*(\S+)/.exec(command)?.[1] ?? /(?:^|\s)TOXENV=(\S+)/.exec(command)?.[1];
  const pyFactor = `py${python.replace('.', '')}`;
  const onPython = (name: string) => name.split('-').map((factor) => (/^py3\d+$/.test(factor) ? pyFactor : factor)).join('-');
  if (named) return onPython(expandNames(named)[0] ?? named);
  // tox-gh-actions: `[gh-actions] python = 3.11: py311` names the environments per Python version.
  const mapping = sections.get('gh-actions')?.get('python');
  if (mapping) {
    for (const line of mapping.split('\n')) {
      const [version, envs] = line.split(':').map((part) => part.trim());
      if (version === python && envs) return expandNames(envs).find((name) => name.startsWith('py')) ?? expandNames(envs)[0];
    }
  }
  const envlist = expandNames(sections.get('tox')?.get('envlist') ?? '');
  return envlist.find((name) => name.split('-').includes(pyFactor)) ?? envlist.find((name) => /^py3?(-|$)/.test(name)) ?? (envlist.length === 0 ? pyFactor : undefined);
}

/** `{posargs}`, `{posargs:x}`, `{toxinidir}`, `{envpython}`… as a step runs them; undefined when a substitution is unknown. */
function substitute(text: string, sections: Sections): string | undefined {
  let unknown = false;
  const out = text.replace(/\{([^{}]*)\}/g, (whole, inner: string) => {
    if (inner === 'posargs') return '';
    if (inner.startsWith('posargs:')) return inner.slice('posargs:'.length);
    if (inner === 'toxinidir' || inner === 'toxworkdir') return '.';
    if (inner === 'envpython') return 'python';
    if (inner === 'envbindir') return '.venv/bin';
    if (inner === '/') return '/';
    const reference = /^\[([^\]]+)\](.+)$/.exec(inner);
    const value = reference ? sections.get(reference[1] ?? '')?.get((reference[2] ?? '').trim()) : undefined;
    if (value !== undefined) return value;
    unknown = true;
    return whole;
  });
  return unknown ? undefined : out;
}

/** The values of `key` for `env` (its own section, else `[testenv]`), one a line, factor conditions applied. */
function lines(sections: Sections, env: string, key: string): string[] | undefined {
  const value = sections.get(`testenv:${env}`)?.get(key) ?? sections.get('testenv')?.get(key);
  if (value === undefined) return [];
  const out: string[] = [];
  for (const line of value.split('\n')) {
    const kept = conditional(line.trim(), env);
    if (kept === undefined || kept === '') continue;
    const done = substitute(kept, sections);
    if (done === undefined) return undefined;
    out.push(...done.split('\n').map((part) => part.trim()).filter(Boolean));
  }
  return out;
}

/**
 * The tox environment a CI step (`command`, one line) runs, from tox.ini's text, on `python`
 * (`3.11`); undefined when the step is not tox or tox.ini does not say clearly (the step then
 * stays as written).
 */
export function toxEnvironment(command: string, toxIni: string | undefined, python: string): ToxEnvironment | undefined {
  if (toxIni === undefined || command.includes('\n') || /&&|\|\||;/.test(command)) return undefined;
  if (!/^(?:[A-Za-z_]\w*=\S*\s+)*(?:python3?\s+-m\s+)?tox(?:\s+(?:run|r))?(?:\s|$)/.test(command)) return undefined;
  const sections = parseIni(toxIni);
  const name = chosenEnvironment(sections, command, python);
  if (!name) return undefined;
  const commands = lines(sections, name, 'commands');
  const deps = lines(sections, name, 'deps');
  const extras = lines(sections, name, 'extras');
  const setenv = lines(sections, name, 'setenv');
  const changedir = lines(sections, name, 'changedir');
  if (!commands || commands.length === 0 || !deps || !extras || !setenv || !changedir) return undefined;
  const env: Record<string, string> = {};
  for (const line of setenv) {
    const pair = /^([A-Za-z_]\w*)\s*=\s*(.*)$/.exec(line);
    if (pair) env[pair[1] ?? ''] = pair[2] ?? '';
  }
  const cwd = changedir[0] && changedir[0] !== '.' ? changedir[0].replace(/^\.\//, '') : undefined;
  const flag = (value: string | undefined) => /^true$/i.test(value ?? '');
  const skipInstall = flag(sections.get(`testenv:${name}`)?.get('skip_install') ?? sections.get('testenv')?.get('skip_install')) || flag(sections.get('tox')?.get('skipsdist'));
  const steps = commands.map((line): CiStep => {
    // tox's leading `-`: the command's failure is ignored.
    const command = line.startsWith('-') ? `${line.slice(1).trim()} || true` : line;
    return { name: `tox ${name}`.slice(0, 200), command, ...(cwd ? { cwd } : {}), ...(Object.keys(env).length > 0 ? { env } : {}) };
  });
  return { name, deps: deps.flatMap((dep) => (/^-[rc]\s*\S/.test(dep) ? [dep.replace(/^-([rc])\s*/, '-$1 ')] : [dep])), extras: extras.flatMap((extra) => extra.split(',').map((part) => part.trim()).filter(Boolean)), skipInstall, steps };
}
