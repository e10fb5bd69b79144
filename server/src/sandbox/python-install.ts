/*
 * How a Python project is installed for its test job when its CI does not say (recipe.ts calls
 * this; the CI's own install steps win where ci-recipe.ts follows them): a venv that sees the
 * base image's Debian packages (build backends, pytest and its common plugins), the root's
 * requirements*.txt, the test requirements kept outside the root (`tests/requirements.txt`,
 * `requirements/test.txt`, …), the project itself with its test extra (`.[test]`), and its
 * `[dependency-groups]` test group (PEP 735, which Debian's pip 23 cannot read: a helper the build
 * writes prints the group's requirements). Pure.
 */

import { PYTHON_REQUIREMENTS_HELPER } from './python-requirements';

/** Test requirement files below the root that are installed for the test job, where they exist. */
export const TEST_REQUIREMENT_FILES = [
  'tests/requirements.txt',
  'test/requirements.txt',
  'tests/requirements-test.txt',
  'requirements/test.txt',
  'requirements/tests.txt',
  'requirements/testing.txt',
  'requirements/dev.txt',
] as const;

/** Extras and dependency groups taken for the test job, the first present of test|tests|testing, else dev. */
const TEST_NAMES = ['test', 'tests', 'testing'];
const FALLBACK_NAME = 'dev';

/** Where the build writes DEPENDENCY_GROUPS_PROGRAM (snapshot-build.ts), before the install runs. */
export const DEPENDENCY_GROUPS_HELPER = '/tmp/dockhand/dependency-groups.py';

/**
 * Prints, one a line, the requirements of the named `[dependency-groups]` of ./pyproject.toml,
 * following `{include-group = "…"}` (PEP 735). Python 3.11's tomllib.
 */
export const DEPENDENCY_GROUPS_PROGRAM = `import sys, tomllib
with open('pyproject.toml', 'rb') as file:
    groups = tomllib.load(file).get('dependency-groups', {})
seen, out = set(), []
def visit(name):
    if name in seen:
        return
    seen.add(name)
    for item in groups.get(name, []):
        if isinstance(item, dict) and 'include-group' in item:
            visit(item['include-group'])
        elif isinstance(item, str):
            out.append(item)
for name in sys.argv[1:]:
    visit(name)
print('\\n'.join(out))
`;

/**
 * The keys of a TOML table `[name]` (up to the next table header), read from the text; for a
 * dotted name also the dotted keys of its parent table (`optional-dependencies.tests = [` under
 * `[project]`, as pyproject-fmt writes it).
 */
export function tableKeys(toml: string, name: string): string[] {
  const header = `[${name}]`;
  const dot = name.lastIndexOf('.');
  const parent = dot > 0 ? `[${name.slice(0, dot)}]` : undefined;
  const prefix = dot > 0 ? name.slice(dot + 1) : '';
  const keys: string[] = [];
  let table = '';
  for (const raw of toml.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('[')) {
      table = line.replace(/\s+/g, '');
      continue;
    }
    if (table === header) {
      const key = /^["']?([A-Za-z0-9_.-]+)["']?\s*=/.exec(line)?.[1];
      if (key) keys.push(key);
    } else if (parent && table === parent) {
      const key = new RegExp(`^${prefix.replace(/[.-]/g, '\\$&')}\\.["']?([A-Za-z0-9_-]+)["']?\\s*=`).exec(line)?.[1];
      if (key) keys.push(key);
    }
  }
  return keys;
}

function testName(names: readonly string[]): string | undefined {
  return TEST_NAMES.find((name) => names.includes(name)) ?? (names.includes(FALLBACK_NAME) ? FALLBACK_NAME : undefined);
}

export interface PythonInstallInput {
  rootFiles: readonly string[];
  files: Readonly<Record<string, string | undefined>>;
  /** Root requirements files, or environment.yml's `python.requirements` (then nothing else is added). */
  requirements: readonly string[];
  fromEnvironmentFile: boolean;
  installable: boolean;
}

/**
 * After a failed build of the project itself: `src/` (a src layout) or the root on the venv's
 * import path through a `.pth` file, and a line in the build log saying so.
 */
export const SOURCE_TREE_FALLBACK =
  `{ dir=$([ -d src ] && echo "$PWD/src" || echo "$PWD"); ` +
  `echo "dockhand: the project could not be built with the base image's build backends (above); its tests run on the source tree: $dir is on the import path" >&2; ` +
  `.venv/bin/python -c 'import site, sys; open(site.getsitepackages()[0] + "/dockhand-source-tree.pth", "w").write(sys.argv[1] + "\\n")' "$dir"; }`;

/**
 * After pip refused a test requirement file whole (one requirement it cannot find makes it install
 * none): each requirement on its own, from pip, else from Debian (python-requirements.ts), those it
 * cannot get named in the build log.
 */
export function bestEffort(files: readonly string[]): string {
  return `{ echo "dockhand: not every test requirement is available here (above); installing those that are, one by one" >&2; .venv/bin/python ${PYTHON_REQUIREMENTS_HELPER} ${files.map((file) => `-r ${file}`).join(' ')}; }`;
}

/** Where the build lists the requirements of the project's extras when pip cannot install them with it. */
const EXTRAS_LIST = '.venv/dockhand-extras.txt';

/** Prints, one a line, the requirements of the named extras in ./pyproject.toml, leaving out the project itself (`marshmallow[tests]`). */
const EXTRAS_PROGRAM =
  'import re, sys, tomllib; project = tomllib.load(open("pyproject.toml", "rb")).get("project", {}); ' +
  'canonical = lambda name: re.sub(r"[-_.]+", "-", name).lower(); ' +
  'print("\\n".join(r for extra in sys.argv[1:] for r in project.get("optional-dependencies", {}).get(extra, []) if canonical(re.split(r"[\\s\\[<>=!~;]", r, maxsplit=1)[0]) != canonical(project.get("name", ""))))';

/**
 * The project itself, editable, with its `extras`. pip installs none of it when one extra's
 * requirement is on no index (census marshmallow: `.[tests]` needs simplejson, which only Debian
 * has here): then the extras' requirements one by one (pip, else Debian's package, else named in
 * the log), and the project without them, else its source tree on the import path.
 */
export function projectInstall(extras: readonly string[]): string {
  if (extras.length === 0) return `{ .venv/bin/pip install -q --no-build-isolation -e . || ${SOURCE_TREE_FALLBACK}; }`;
  const named = extras.map((extra) => `'${extra.replace(/'/g, '')}'`).join(' ');
  const requirements = `{ .venv/bin/python -c '${EXTRAS_PROGRAM}' ${named} > ${EXTRAS_LIST} && .venv/bin/python ${PYTHON_REQUIREMENTS_HELPER} -r ${EXTRAS_LIST} || true; }`;
  return `{ .venv/bin/pip install -q --no-build-isolation -e '.[${extras.join(',')}]' || { ${requirements}; .venv/bin/pip install -q --no-build-isolation -e . || ${SOURCE_TREE_FALLBACK}; }; }`;
}

/** The install steps (the venv first) and the requirement files they name. */
export function pythonInstallSteps(input: PythonInstallInput): { steps: string[]; requirements: string[] } {
  const requirements = [...input.requirements];
  if (!input.fromEnvironmentFile) {
    for (const path of TEST_REQUIREMENT_FILES) if (input.files[path] !== undefined && !requirements.includes(path)) requirements.push(path);
  }
  const steps = ['python3 -m venv --system-site-packages .venv'];
  // What the project needs to run is required; what only its tests use (pytest>=8 where Debian has
  // 7.2, a plugin Debian lacks) is installed where it can be: the tests say what is missing.
  const runtime = requirements.filter((name) => input.fromEnvironmentFile || name === 'requirements.txt');
  const testOnly = requirements.filter((name) => !runtime.includes(name));
  // Required, though a requirement pip cannot get may come from Debian's package of that name.
  if (runtime.length > 0) {
    const files = runtime.map((name) => `-r ${name}`).join(' ');
    steps.push(`{ .venv/bin/pip install -q ${files} || .venv/bin/python ${PYTHON_REQUIREMENTS_HELPER} --required ${files}; }`);
  }
  if (testOnly.length > 0) steps.push(`{ .venv/bin/pip install -q ${testOnly.map((name) => `-r ${name}`).join(' ')} || ${bestEffort(testOnly)}; }`);
  const pyproject = input.files['pyproject.toml'];
  const extra = pyproject !== undefined && !input.fromEnvironmentFile ? testName(tableKeys(pyproject, 'project.optional-dependencies')) : undefined;
  // Built with the base image's Debian backends: the package index may not be reachable for build isolation.
  // A project those backends cannot build (newer metadata: PEP 639's `license = "MIT"`, a
  // backend version Debian lacks) still has tests that run on its source tree, as its own
  // developers run them: its source directory goes on the venv's import path, said in the log.
  if (input.installable) steps.push(projectInstall(extra ? [extra] : []));
  const group = pyproject !== undefined && !input.fromEnvironmentFile ? testName(tableKeys(pyproject, 'dependency-groups')) : undefined;
  if (group) {
    const list = '/tmp/dockhand/dependency-groups.txt';
    steps.push(`.venv/bin/python ${DEPENDENCY_GROUPS_HELPER} ${group} > ${list} && { .venv/bin/pip install -q -r ${list} || ${bestEffort([list])}; }`);
  }
  return { steps, requirements };
}
