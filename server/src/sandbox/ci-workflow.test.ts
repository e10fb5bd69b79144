import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { matrixCells, readCiTestJob, type CiPreference, type CiTestJob } from './ci-workflow';

/*
 * The CI reader on real repositories' workflows, copied as they were (testdata/workflows, the
 * repository and commit in each test's name), plus small written ones for what none of those shows.
 */

const fixture = (name: string): string => readFileSync(join(import.meta.dirname, 'testdata', 'workflows', name), 'utf8');
const SANDBOX: CiPreference = { nodeMajor: 22, python: '3.11' };

/** The reader over `workflows` (path in .github/workflows → fixture file name or inline text). */
function read(workflows: Record<string, string>, preference: CiPreference = SANDBOX, rootFiles: string[] = ['package.json']) {
  const files: Record<string, string> = {};
  for (const [path, source] of Object.entries(workflows)) files[`.github/workflows/${path}`] = source.includes('\n') ? source : fixture(source);
  return readCiTestJob(files, rootFiles, preference);
}

function job(workflows: Record<string, string>, preference?: CiPreference, rootFiles?: string[]): CiTestJob {
  const reading = read(workflows, preference, rootFiles);
  if (!reading.job) throw new Error(`no job: ${reading.reason}`);
  return reading.job;
}

describe('real workflows', () => {
  it('tj/commander.js ba6d13d: the ubuntu cell on the recipe\'s Node line, npm ci, then each test and check step', () => {
    const found = job({ 'tests.yml': 'commander-tests.yml' });
    expect(found.cell).toEqual({ 'node-version': '22.x', os: 'ubuntu-latest' });
    expect(found.install).toEqual(['npm ci']);
    expect(found.steps).toEqual([
      { name: 'npm test', command: 'npm test' },
      { name: 'npm run check', command: 'npm run check' },
    ]);
    expect(found.source).toBe('.github/workflows/tests.yml › test › "npm test" (node-version 22.x, os ubuntu-latest)');
    expect(job({ 'tests.yml': 'commander-tests.yml' }, { nodeMajor: 24 }).cell['node-version']).toBe('24.x');
  });

  it('unjs/ufo 11308c0: corepack set-up left out; pnpm install; lint, build and vitest kept in order; the coverage upload left out', () => {
    const found = job({ 'ci.yml': 'ufo-ci.yml' });
    expect(found.nodeSpecs).toEqual(['20']);
    expect(found.install).toEqual(['pnpm install']);
    expect(found.steps.map((step) => step.command)).toEqual(['pnpm lint', 'pnpm build', 'pnpm vitest --coverage']);
    expect(found.source).toBe('.github/workflows/ci.yml › ci › "pnpm vitest --coverage"');
  });

  it('vuejs/core e2bede9: follows ci.yml\'s `uses: ./.github/workflows/test.yml` to its Linux unit job, with the job\'s env', () => {
    const found = job({ 'ci.yml': 'vue-ci.yml', 'test.yml': 'vue-test.yml' });
    expect(found).toMatchObject({ file: '.github/workflows/test.yml', via: '.github/workflows/ci.yml › test', job: 'unit-test', install: ['pnpm install'] });
    expect(found.steps).toEqual([{ name: 'Run unit tests', command: 'pnpm run test-unit', env: { PUPPETEER_SKIP_DOWNLOAD: 'true' } }]);
    // test.yml runs only when called: read alone, it is no test job.
    expect(read({ 'test.yml': 'vue-test.yml' }).reason).toBe('no workflow runs for pushes or pull requests');
  });

  it('agronholm/anyio 660a06d: matrix include, ${{ matrix.extras }} expanded, steps for other cells and runners dropped, job if: on needs.* kept', () => {
    const found = job({ 'test.yml': 'anyio-test.yml' }, SANDBOX, ['pyproject.toml']);
    expect(found.cell).toEqual({ os: 'ubuntu-latest', 'python-version': '3.11', extras: '[trio]', 'lowest-bound': false });
    expect(found.python).toBe('3.11');
    // The lowest-bound install is for another cell; the hosts patch needs sudo (set-up, left out).
    expect(found.install).toEqual(['pip install --group test -e .[trio]']);
    // `coverage xml` writes the report an upload sends: set-up, not a check.
    expect(found.steps).toEqual([{ name: 'Test with pytest', command: 'coverage run -m pytest -v', env: { PYTEST_DISABLE_PLUGIN_AUTOLOAD: '1' } }]);
  });

  it('jpadilla/pyjwt dcc27a9: the 3.11 cell (the first setup-python counts), tox through tox.ini, a multi-line install as one command, the coverage step for 3.9 dropped', () => {
    const found = job({ 'main.yml': 'pyjwt-main.yml' }, SANDBOX, ['tox.ini', 'pyproject.toml']);
    expect(found.cell).toEqual({ platform: 'ubuntu-latest', 'python-version': '3.11' });
    expect(found.install).toEqual([
      // Upgrading pip itself is the runner's set-up: the sandbox's pip is the image's.
      'python -m pip install --upgrade coverage[toml] virtualenv tox tox-gh-actions',
    ]);
    expect(found.steps).toEqual([{ name: 'Run tox targets for 3.11', command: 'python -m tox', env: { USING_COVERAGE: '3.9' } }]);
    expect(found.runsThrough).toEqual(['tox.ini']);
  });

  it('encode/httpx ae1b9f6: an install script the sandbox cannot take as written stays detection\'s; its four check scripts run in order', () => {
    const found = job({ 'test-suite.yml': 'httpx-test-suite.yml' }, SANDBOX, ['requirements.txt', 'pyproject.toml']);
    expect(found.install).toEqual([]);
    expect(found.otherInstalls).toEqual(['scripts/install']);
    expect(found.steps.map((step) => step.command)).toEqual(['scripts/check', 'scripts/build', 'scripts/test', 'scripts/coverage']);
    expect(found.source).toBe('.github/workflows/test-suite.yml › tests › "Run tests" (python-version 3.11)');
  });

  it('colinhacks/zod e516c3b: release.yml is not followed; test.yml\'s first TypeScript cell, whose pnpm add is an install step', () => {
    const found = job({ 'release.yml': 'zod-release.yml', 'test.yml': 'zod-test.yml' });
    expect(found.file).toBe('.github/workflows/test.yml');
    expect(found.cell).toEqual({ os: 'ubuntu-latest', node: 'lts/*', typescript: '5.5' });
    expect(found.install).toEqual(['pnpm install', 'pnpm add typescript@5.5 -w']);
    expect(found.steps.map((step) => step.command)).toEqual(['pnpm build', 'pnpm test', 'pnpm run --filter @zod/resolution test:all', 'pnpm run --filter @zod/integration test:all']);
  });

  it('trpc/trpc 340811b: secrets and vars left out of the env; a multi-line check runs as bash -e would; the install is in a composite action (detection\'s)', () => {
    const found = job({ 'main.yml': 'trpc-main.yml' });
    expect(found.job).toBe('test');
    expect(found.install).toEqual([]);
    expect(found.steps[0]).toEqual({ name: 'MUTE_REACT_ACT_WARNINGS=1 pnpm test --coverage', command: 'MUTE_REACT_ACT_WARNINGS=1 pnpm test --coverage' });
    expect(found.steps[1]?.name).toBe('Verify committed openapi test fixtures');
    expect(found.steps[1]?.command.startsWith('set -e\nif [[ -n "$(git status --porcelain')).toBe(true);
    expect(found.steps.every((step) => step.env === undefined)).toBe(true);
  });

  it('TanStack/query 40321a0 (nx): the Nx Cloud agents are set-up, not checks; its secret token is left out', () => {
    const found = job({ 'pr.yml': 'tanstack-query-pr.yml' });
    expect(found.steps).toEqual([{ name: 'Run Checks', command: 'pnpm run test:pr' }]);
  });

  it('psf/requests 1f6589e: "Install dependencies: make" is an install it cannot take; "Run tests: make ci" is the test step by its name', () => {
    const found = job({ 'run-tests.yml': 'requests-run-tests.yml' }, SANDBOX, ['Makefile', 'pyproject.toml']);
    expect(found.cell).toEqual({ 'python-version': '3.11', os: 'ubuntu-22.04' });
    expect(found.otherInstalls).toEqual(['make']);
    expect(found.steps).toEqual([{ name: 'Run tests', command: 'make ci' }]);
    expect(found.runsThrough).toEqual(['Makefile target ci']);
  });

  it('fastify/fastify 83e6976: ci.yml\'s test-unit ("Run tests: npm run unit") before ci-alternative-runtime.yml\'s, whose failures do not fail the CI', () => {
    const found = job({ 'ci-alternative-runtime.yml': 'fastify-ci-alternative-runtime.yml', 'ci.yml': 'fastify-ci.yml' });
    expect(found).toMatchObject({ file: '.github/workflows/ci.yml', job: 'test-unit', nodeSpecs: ['24'], install: ['npm install --ignore-scripts'] });
    expect(found.steps).toEqual([{ name: 'Run tests', command: 'npm run unit' }]);
  });

  it('marshmallow-code/marshmallow 341b927: build-release.yml runs for pull requests, so its tests job is followed, on 3.13 (as near 3.11 as 3.9, and newer)', () => {
    const found = job({ 'build-release.yml': 'marshmallow-build-release.yml' }, SANDBOX, ['tox.ini']);
    expect(found.job).toBe('tests');
    expect(found.install).toEqual(['python -m pip install tox']);
    expect(found.steps.map((step) => step.command)).toEqual(['python -m tox -e py313']);
  });

  it('tqdm/tqdm f6a30fa: of an install step only the installs are taken (its curl download of a coverage tool and $GITHUB_PATH echo are the runner\'s set-up)', () => {
    const found = job({ 'test.yml': 'tqdm-test.yml' }, SANDBOX, ['tox.ini']);
    expect(found.install).toEqual(["pip install 'tox>=4' tox-gh"]);
    expect(found.steps.map((step) => step.command)).toEqual(['tox']);
    expect(found.runsThrough).toEqual(['tox.ini']);
  });

  it('sindresorhus/execa 8017b27: `npm run unit` is a test step; the lint step for Node 26 only is dropped in the Node 22 cell', () => {
    const found = job({ 'main.yml': 'execa-main.yml' });
    expect(found.cell).toEqual({ 'node-version': 22, os: 'ubuntu' });
    expect(found.steps.map((step) => step.command)).toEqual(['npm run type', 'npm run unit']);
  });

  it('lukeed/dequal 37c21f6: the Node 18 cell\'s coverage steps; its codecov upload is left out; the global c8 install leading the test step goes to the install', () => {
    const found = job({ 'ci.yml': 'dequal-ci-upstream.yml' }, { nodeMajor: 18 });
    expect(found.cell).toEqual({ nodejs: 18 });
    // The test run has no network: `npm install -g c8` runs in the snapshot build.
    expect(found.install).toEqual(['npm install', 'npm install -g c8']);
    expect(found.steps).toEqual([{ name: 'Test w/ Coverage', command: 'c8 --include=src npm test' }]);
    // On a line below 18 the plain test step runs instead.
    expect(job({ 'ci.yml': 'dequal-ci-upstream.yml' }, { nodeMajor: 12 }).steps).toEqual([{ name: 'Test', command: 'npm test' }]);
  });

  it('lukeed/clsx 684509c: the Node 18 cell takes its own `if:` install (npm install -g c8) with its `if:` tests; its report and codecov upload are not test steps', () => {
    const found = job({ 'ci.yml': 'clsx-ci.yml' });
    expect(found.cell).toEqual({ nodejs: 18 });
    expect(found.install).toEqual(['npm install', 'npm install -g c8']);
    expect(found.otherInstalls).toEqual([]);
    expect(found.steps).toEqual([
      { name: 'Build', command: 'npm run build' },
      { name: '(coverage) Test', command: 'c8 --include=src npm test' },
    ]);
    // The Node 16 cell: none of the coverage steps, plain `npm test`.
    expect(job({ 'ci.yml': 'clsx-ci.yml' }, { nodeMajor: 16 }).steps.map((step) => step.command)).toEqual(['npm run build', 'npm test']);
    expect(job({ 'ci.yml': 'clsx-ci.yml' }, { nodeMajor: 16 }).install).toEqual(['npm install']);
  });

  it('of two cells on the same Node line, the one whose installs the sandbox can all run (no `bun install`)', () => {
    const workflow = 'on: pull_request\njobs:\n  test:\n    runs-on: ubuntu-latest\n    strategy:\n      matrix:\n        runtime: [bun, node]\n    steps:\n      - uses: actions/setup-node@v4\n        with: { node-version: 22 }\n      - run: bun install\n        if: matrix.runtime == \'bun\'\n      - run: npm ci\n        if: matrix.runtime == \'node\'\n      - run: npm test\n';
    const found = job({ 'ci.yml': workflow });
    expect(found.cell).toEqual({ runtime: 'node' });
    expect(found.install).toEqual(['npm ci']);
  });

  it('npm/hosted-git-info 4862744: a matrix of objects (platform: {name, os, shell}) less an exclude of one object keeps the Linux cells', () => {
    const found = job({ 'ci.yml': 'hosted-git-info-ci.yml' });
    expect(found.cell).toMatchObject({ platform: { name: 'Linux', os: 'ubuntu-latest', shell: 'bash' } });
    expect(found.install).toEqual(['npm i --ignore-scripts --no-audit --no-fund']);
    expect(found.steps).toEqual([{ name: 'Test', command: 'npm test --ignore-scripts' }]);
  });

  it('jshttp/etag 5df2cfd: installing Node with nvm and listing the environment into $GITHUB_OUTPUT are set-up; the tests and lint run', () => {
    const found = job({ 'ci.yml': 'etag-ci.yml' });
    // "Setup Node.js version-specific dependencies" (a bash if the reader cannot decide) keeps detection's install.
    expect(found.otherInstalls).toHaveLength(1);
    expect(found.otherInstalls[0]).toMatch(/^# eslint for linting/);
    expect(found.steps.map((step) => step.name)).toEqual(['Run tests', 'Lint code']);
  });

  it('kentcdodds/match-sorter 65e774a: `npm run validate` (kcd-scripts: lint, test, build) is the test step', () => {
    expect(job({ 'validate.yml': 'match-sorter-validate.yml' }).steps).toEqual([{ name: '▶️ Run validate script', command: 'npm run validate' }]);
  });

  it('moment/luxon b6b9d03: the job\'s env (TZ, LANG) reaches every step', () => {
    const found = job({ 'test.yml': 'luxon-test.yml' });
    expect(found.steps.length).toBeGreaterThan(1);
    for (const step of found.steps) expect(step.env).toEqual({ LANG: 'en_US.utf8', LIMIT_JEST: 'yes', TZ: 'America/New_York' });
  });

  it('eslint/rewrite cc71fb5: "npm install and test" in one step — the install goes where installs run, the test stays', () => {
    const found = job({ 'ci.yml': 'eslint-rewrite-ci.yml' });
    expect(found.install).toEqual(['npm install']);
    expect(found.steps).toEqual([{ name: 'npm install and test', command: 'npm run test:unit', env: { CI: 'true' } }]);
  });

  it('facebook/prop-types 1c9c631: the matrix\'s `yarn add react@17` is an install; `yarn list` is set-up', () => {
    const found = job({ 'ci.yml': 'prop-types-ci.yml' });
    expect(found.install).toEqual(['yarn install', 'yarn add react@17']);
    expect(found.steps.map((step) => step.command)).toEqual(['yarn run pretest', 'yarn run tests-only', 'yarn run build']);
  });

  it('falls back, saying why, where the tests need what the sandbox lacks or another job made', () => {
    expect(read({ 'test.yml': 'pluggy-test.yml' }).reason).toContain(".github/workflows/test.yml › test needs another job's artifacts");
    expect(read({ 'tests.yaml': 'click-tests.yaml' }).reason).toContain('.github/workflows/tests.yaml › tests runs its tests with uv, which the sandbox does not have');
    expect(read({ 'ci.yml': 't3-env-ci.yml' }).reason).toContain('.github/workflows/ci.yml › test runs its tests with bun');
    expect(read({ 'test.yml': 'packaging-test.yml' }).reason).toContain('.github/workflows/test.yml › test runs its tests with pipx');
    expect(read({ 'test.yml': 'humanize-test.yml' }).reason).toContain('runs its tests with uvx');
  });
});

describe('matrix cells', () => {
  it('pypa/packaging 053c884: the product less exclude, include entries merged or added', () => {
    const cells = matrixCells({
      os: ['Ubuntu', 'Windows'],
      python_version: ['3.13', '3.13t'],
      include: [{ os: 'Ubuntu', python_version: '3.11.0' }, { os: 'Windows', label: 'win' }],
      exclude: [{ os: 'Windows', python_version: '3.13t' }],
    });
    expect(cells).toEqual([
      { os: 'Ubuntu', python_version: '3.13' },
      { os: 'Ubuntu', python_version: '3.13t' },
      { os: 'Windows', python_version: '3.13', label: 'win' },
      { os: 'Ubuntu', python_version: '3.11.0' },
    ]);
  });

  it('an include-only matrix is its entries; a fromJSON matrix cannot be expanded', () => {
    expect(matrixCells({ include: [{ python: '3.14' }, { python: '3.11' }] })).toEqual([{ python: '3.14' }, { python: '3.11' }]);
    expect(matrixCells('${{ fromJSON(needs.setup.outputs.matrix) }}')).toBeUndefined();
  });
});

const written = (jobs: string, on = '[push, pull_request]'): string => `name: ci\non: ${on}\njobs:\n${jobs}`;

describe('written workflows', () => {
  it("GitHub's Python starter workflow: its install step is the install (its `if [ -f … ]` line kept), its flake8 step a check, pytest the test (#32)", () => {
    const found = job(
      {
        'python-app.yml': written(`  build:
    runs-on: ubuntu-latest
    steps:
    - uses: actions/checkout@v4
    - name: Set up Python 3.10
      uses: actions/setup-python@v3
      with:
        python-version: "3.10"
    - name: Install dependencies
      run: |
        python -m pip install --upgrade pip
        pip install flake8 pytest
        if [ -f requirements.txt ]; then pip install -r requirements.txt; fi
    - name: Lint with flake8
      run: |
        # stop the build if there are Python syntax errors or undefined names
        flake8 . --count --select=E9,F63,F7,F82 --show-source --statistics
        flake8 src tests --count --exit-zero --max-complexity=10 --max-line-length=127 --statistics
    - name: Test with pytest
      run: |
        pytest
`),
      },
      SANDBOX,
      ['requirements.txt', 'setup.py'],
    );
    expect(found.install).toEqual(['pip install flake8 pytest && if [ -f requirements.txt ]; then pip install -r requirements.txt; fi']);
    expect(found.steps.map((step) => step.name)).toEqual(['Lint with flake8', 'Test with pytest']);
    expect(found.source).toBe('.github/workflows/python-app.yml › build › "Test with pytest"');
  });

  it('a job whose only "test" step is a tox lint environment runs no test step', () => {
    const reading = read({
      'lint.yml': written(`  lint:
    runs-on: ubuntu-latest
    steps:
      - run: pip install tox
      - run: tox -e lint,mypy
`),
    });
    expect(reading.reason).toContain('runs no test step');
  });

  it('working-directory: the job default, a step\'s own, and ${{ github.workspace }} read as the repository root', () => {
    const found = job({
      'ci.yml': written(`  test:
    runs-on: ubuntu-latest
    defaults:
      run:
        working-directory: ./packages/core
    steps:
      - uses: actions/checkout@v4
      - run: npm ci
      - run: npm test
      - name: docs examples
        working-directory: \${{ github.workspace }}/docs
        run: node --test examples/
`),
    });
    expect(found.install).toEqual(['cd packages/core && npm ci']);
    expect(found.steps).toEqual([
      { name: 'npm test', command: 'npm test', cwd: 'packages/core' },
      { name: 'docs examples', command: 'node --test examples/', cwd: 'docs' },
    ]);
  });

  it('a turbo monorepo with pnpm/action-setup: the pnpm version, the turbo step as written, make test recorded', () => {
    const found = job({
      'ci.yml': written(`  build:
    runs-on: ubuntu-latest
    steps:
      - uses: pnpm/action-setup@v4
        with:
          version: 9.15.0
      - uses: actions/setup-node@v4
        with:
          node-version: 20
      - run: pnpm install --frozen-lockfile
      - run: pnpm turbo run test --filter=./packages/*
      - run: make test
`),
    });
    expect(found.pnpm).toBe('9.15.0');
    expect(found.pnpmAction).toBe('pnpm/action-setup');
    expect(found.steps.map((step) => step.command)).toEqual(['pnpm turbo run test --filter=./packages/*', 'make test']);
    expect(found.runsThrough).toEqual(['Makefile target test']);
  });

  it('leaves out jobs on tags, schedules, macOS or releases, and steps it cannot expand', () => {
    const reading = read({
      'ci.yml': written(`  publish:
    runs-on: ubuntu-latest
    steps: [{ run: npm test }]
  tagged:
    if: startsWith(github.ref, 'refs/tags/')
    runs-on: ubuntu-latest
    steps: [{ run: npm test }]
  nightly:
    if: github.event_name == 'schedule'
    runs-on: ubuntu-latest
    steps: [{ run: npm test }]
  mac:
    runs-on: macos-14
    steps: [{ run: npm test }]
`),
      'scheduled.yml': written(`  test:
    runs-on: ubuntu-latest
    steps: [{ run: npm test }]
`, '{ schedule: [{ cron: "0 0 * * *" }] }'),
    });
    expect(reading.reason).toContain('.github/workflows/ci.yml › tagged does not run for a pull request (its if:)');
    expect(reading.reason).toContain('.github/workflows/ci.yml › nightly does not run for a pull request (its if:)');
    expect(reading.reason).toContain('.github/workflows/ci.yml › mac runs on Windows or macOS only');
    const found = job({
      'ci.yml': written(`  test:
    runs-on: ubuntu-latest
    env:
      TOKEN: \${{ secrets.NPM_TOKEN }}
      MODE: strict
    steps:
      - run: npm ci
      - run: npm test -- --shard=\${{ inputs.shard }}
      - run: npm test
        env:
          LEVEL: \${{ env.MODE }}-1
`),
    });
    expect(found.steps).toEqual([{ name: 'npm test', command: 'npm test', env: { MODE: 'strict', LEVEL: 'strict-1' } }]);
  });

  it('a job named test comes before an earlier one that also tests; browser and e2e jobs are not followed', () => {
    const found = job({
      'ci.yml': written(`  e2e:
    runs-on: ubuntu-latest
    steps: [{ run: npm ci }, { run: npm run test:e2e }]
  checks:
    runs-on: ubuntu-latest
    steps: [{ run: npm ci }, { run: npm run lint && npm test }]
  test:
    runs-on: ubuntu-latest
    steps: [{ run: npm ci }, { run: npx vitest run }]
`),
    });
    expect(found.job).toBe('test');
    expect(found.steps.map((step) => step.command)).toEqual(['npx vitest run']);
    const withDatabase = job({
      'ci.yml': written(`  test:
    runs-on: ubuntu-latest
    services:
      postgres: { image: postgres }
    steps: [{ run: npm ci }, { run: npm run test:db }]
  unit:
    runs-on: ubuntu-latest
    steps: [{ run: npm ci }, { run: npm run test:unit }]
`),
    });
    expect(withDatabase.job).toBe('unit');
    expect(read({ 'ci.yml': written(`  e2e:\n    runs-on: ubuntu-latest\n    steps: [{ run: npm ci }, { run: npm run test:e2e }]\n`) }).reason).toBe('no test job to follow: .github/workflows/ci.yml › e2e is a browser or end-to-end job');
  });

  it('a local reusable workflow gets its caller\'s with: over its input defaults', () => {
    const found = job({
      'ci.yml': written(`  unit:
    uses: ./.github/workflows/run.yml
    with:
      script: test:unit
`),
      'run.yml': `on:
  workflow_call:
    inputs:
      script: { type: string, required: true }
      directory: { type: string, default: packages/core }
jobs:
  run:
    runs-on: \${{ inputs.os || 'ubuntu-latest' }}
    defaults:
      run:
        working-directory: \${{ inputs.directory }}
    steps:
      - run: npm ci
      - run: npm run \${{ inputs.script }}
`,
    });
    expect(found).toMatchObject({ via: '.github/workflows/ci.yml › unit', job: 'run', install: ['cd packages/core && npm ci'] });
    expect(found.steps).toEqual([{ name: 'npm run test:unit', command: 'npm run test:unit', cwd: 'packages/core' }]);
  });

  it('without setup-node (nvm in a run step), the cell\'s own node-version picks the line', () => {
    const found = job({
      'ci.yml': written(`  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        include:
          - { name: Node.js 0.10, node-version: '0.10' }
          - { name: Node.js 20.x, node-version: '20.19' }
          - { name: Node.js 22.x, node-version: '22.12' }
    steps:
      - name: Install Node.js \${{ matrix.node-version }}
        run: nvm install --default \${{ matrix.node-version }}
      - run: npm install
      - name: Run tests
        run: npm run test-ci
`),
    });
    expect(found.cell['node-version']).toBe('22.12');
    // nvm's Node is the runner's set-up: the sandbox brings the recipe's Node.
    expect(found.otherInstalls).toEqual([]);
    expect(found.install).toEqual(['npm install']);
    expect(found.steps).toEqual([{ name: 'Run tests', command: 'npm run test-ci' }]);
  });

  it('tox -e names tox.ini; nox names noxfile.py', () => {
    const found = job({
      'ci.yml': written(`  tests:
    runs-on: ubuntu-22.04
    steps:
      - uses: actions/setup-python@v5
        with: { python-version: '3.12' }
      - run: python -m pip install tox nox
      - run: tox -e py
      - run: nox -s lint
`),
    }, SANDBOX, ['tox.ini', 'noxfile.py', 'setup.py']);
    expect(found.runsThrough).toEqual(['tox.ini', 'noxfile.py']);
    expect(found.python).toBe('3.12');
  });
});
