/**
 * The census's repositories (issue #22): public repositories taken exactly as their authors keep
 * them, each by name, the commit that was the head of its default branch when it was fetched, and
 * that branch's name. The rest is metadata written by reading the repository's own CI at that
 * commit: the workflow and job followed (one matrix cell), the Node or Python version it asks for,
 * its install and test steps as the workflow writes them. Nothing of a repository is kept here.
 *
 * Python projects cannot reach PyPI from this machine: `host` says what the host reference runs
 * instead (Debian's python3-* packages for the build backend and test dependencies, the package
 * installed without an index, the tox environment's own command), and why.
 */

export type Language = 'javascript' | 'typescript' | 'python';
export type PackageManager = 'npm' | 'pnpm' | 'yarn-classic' | 'yarn-berry-pnp' | 'yarn-berry-node-modules' | 'pip' | 'tox' | 'hatch' | 'poetry' | 'pdm' | 'uv' | 'make';
export type Runner = 'jest' | 'vitest' | 'mocha' | 'ava' | 'tap' | 'node:test' | 'uvu' | 'pytest' | 'unittest';
export type Monorepo = 'none' | 'npm-workspaces' | 'pnpm-workspace' | 'yarn-workspaces' | 'turbo' | 'nx';
/** Traits the census must cover somewhere. */
export type Trait = 'no-lockfile' | 'and-chain' | 'prepare-script' | 'addopts-plugin' | 'hatchling' | 'flit' | 'poetry' | 'pdm' | 'setuptools';

/** One CI step: its `run:` text as the workflow writes it, with the step's `env:` and `working-directory:`. */
export interface CiStep {
  run: string;
  env?: Record<string, string>;
  workingDirectory?: string;
}

export interface CensusRepo {
  /** `owner/name` on GitHub. */
  repo: string;
  /** Full SHA: the default branch's head when it was fetched. */
  commit: string;
  /** The default branch's real name. */
  branch: string;
  language: Language;
  packageManager: PackageManager;
  runner: Runner;
  monorepo: Monorepo;
  traits: Trait[];
  ci: {
    /** Workflow file and job followed, and the matrix cell picked. */
    workflow: string;
    job: string;
    cell?: string;
    /** The Node version as the workflow asks for it (`22.x`, `lts/*`, `.nvmrc`'s `24.8.0`). */
    node?: string;
    python?: string;
    /** pnpm or yarn version where the workflow or `packageManager` names one. */
    tool?: string;
    /** The workflow's and the job's `env:` (secrets left out). */
    env?: Record<string, string>;
    install: CiStep[];
    test: CiStep[];
  };
  /** Python: what the host reference runs where the CI's steps need PyPI. */
  host?: { debianPackages: string[]; install: CiStep[]; test: CiStep[]; note: string };
}

const step = (run: string, extra: Omit<CiStep, 'run'> = {}): CiStep => ({ run, ...extra });
const steps = (...runs: string[]): CiStep[] => runs.map((run) => step(run));

export const CENSUS: CensusRepo[] = [
  {
    repo: 'lukeed/clsx', commit: '684509c3860a71e9e301b8c33f67e98ad5990c62', branch: 'master',
    language: 'javascript', packageManager: 'npm', runner: 'uvu', monorepo: 'none', traits: ['no-lockfile'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'test', cell: 'nodejs 16', node: '16', install: steps('npm install'), test: steps('npm run build', 'npm test') },
  },
  {
    repo: 'lukeed/dequal', commit: '37c21f675c1f538f2d4b63ebf19a161411e7a5fd', branch: 'master',
    language: 'javascript', packageManager: 'npm', runner: 'uvu', monorepo: 'none', traits: ['no-lockfile'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'test', cell: 'nodejs 18', node: '18', install: steps('npm install'), test: steps('npm install -g c8\nc8 --include=src npm test') },
  },
  {
    repo: 'jshttp/etag', commit: '5df2cfdd46d310ccf51638d5b702375cbd99da44', branch: 'master',
    language: 'javascript', packageManager: 'npm', runner: 'mocha', monorepo: 'none', traits: ['no-lockfile'],
    ci: {
      workflow: '.github/workflows/ci.yml', job: 'test', cell: 'Node.js 20.x', node: '20.9',
      install: steps('npm install'),
      test: steps('if npm -ps ls nyc | grep -q nyc; then\n  npm run test-ci\nelse\n  npm test\nfi', 'npm run lint'),
    },
  },
  {
    repo: 'jshttp/mime-types', commit: '3a1187ee21388efe46b916d4991589d595bcb26c', branch: 'master',
    language: 'javascript', packageManager: 'npm', runner: 'mocha', monorepo: 'none', traits: ['no-lockfile'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'test', cell: 'node-version 20', node: '20', install: steps('npm install'), test: steps('npm run test-ci') },
  },
  {
    repo: 'pillarjs/path-to-regexp', commit: 'cbf30259e6d34d6135f9e7dbaa3371e7188f9936', branch: 'master',
    language: 'typescript', packageManager: 'npm', runner: 'vitest', monorepo: 'none', traits: ['no-lockfile', 'prepare-script', 'and-chain'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'test', cell: 'node-version 18', node: '18', install: steps('npm install'), test: steps('npm test') },
  },
  {
    repo: 'sindresorhus/camelcase', commit: '8596a65fcbfedd474cdedf16f48b7d9381eb7953', branch: 'main',
    language: 'javascript', packageManager: 'npm', runner: 'ava', monorepo: 'none', traits: ['no-lockfile', 'and-chain'],
    ci: { workflow: '.github/workflows/main.yml', job: 'test', cell: 'node-version 20', node: '20', install: steps('npm install'), test: steps('npm test') },
  },
  {
    repo: 'sindresorhus/is', commit: '48df5c429ced9b65fc788aa17ab8b9004d46a772', branch: 'main',
    language: 'typescript', packageManager: 'npm', runner: 'node:test', monorepo: 'none', traits: ['no-lockfile', 'and-chain', 'prepare-script'],
    ci: { workflow: '.github/workflows/main.yml', job: 'test', cell: 'node-version 22', node: '22', install: steps('npm install'), test: steps('npm test') },
  },
  {
    repo: 'syntax-tree/unist-util-visit', commit: '9121f9910c315867bd9a0c960ef5e95715790c2a', branch: 'main',
    language: 'javascript', packageManager: 'npm', runner: 'node:test', monorepo: 'none', traits: ['no-lockfile', 'and-chain'],
    ci: { workflow: '.github/workflows/main.yml', job: 'main', cell: 'node lts/gallium', node: 'lts/gallium', install: steps('npm install'), test: steps('npm test') },
  },
  {
    repo: 'remarkjs/remark', commit: '6c18384e9731146a3e8dffe79d1d8e59316c6bf7', branch: 'main',
    language: 'javascript', packageManager: 'npm', runner: 'node:test', monorepo: 'npm-workspaces', traits: ['no-lockfile', 'and-chain'],
    ci: { workflow: '.github/workflows/main.yml', job: 'main', cell: 'node lts/hydrogen', node: 'lts/hydrogen', install: steps('npm install'), test: steps('npm test') },
  },
  {
    repo: 'kentcdodds/match-sorter', commit: '65e774a4326dd3dcaec5a9cee959976ea175eddf', branch: 'main',
    language: 'typescript', packageManager: 'npm', runner: 'jest', monorepo: 'none', traits: ['no-lockfile'],
    // bahmutov/npm-install runs `npm install` where there is no lockfile.
    ci: { workflow: '.github/workflows/validate.yml', job: 'main', cell: 'node lts/-1', node: 'lts/-1', install: steps('npm install'), test: steps('npm run validate') },
  },
  {
    repo: 'micromatch/picomatch', commit: '4f41a8edade7a5ab19832f7b40ecce46b288767f', branch: 'master',
    language: 'javascript', packageManager: 'npm', runner: 'mocha', monorepo: 'none', traits: ['no-lockfile'],
    ci: { env: { FORCE_COLOR: '2' }, workflow: '.github/workflows/test.yml', job: 'run', cell: 'node 16, ubuntu-latest', node: '16', install: steps('npm install -g npm@8', 'npm install'), test: steps('npm run test:ci') },
  },
  {
    repo: 'markdown-it/markdown-it', commit: '1e8ab89ca299351879169a79d2627fe3a356ce4a', branch: 'master',
    language: 'javascript', packageManager: 'npm', runner: 'mocha', monorepo: 'none', traits: ['and-chain'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'test', node: 'lts/*', install: steps('npm ci'), test: steps('npm test') },
  },
  {
    repo: 'moment/luxon', commit: 'b6b9d03709085008287ed7f4ce5067f0f4be53f2', branch: 'master',
    language: 'javascript', packageManager: 'npm', runner: 'jest', monorepo: 'none', traits: ['prepare-script'],
    ci: { env: { LANG: 'en_US.utf8', LIMIT_JEST: 'yes', TZ: 'America/New_York' }, workflow: '.github/workflows/test.yml', job: 'build-and-test', cell: 'node-version 22.22.1', node: '22.22.1', install: steps('npm ci'), test: steps('npm run build', 'npm run format-check', 'npm run test') },
  },
  {
    repo: 'npm/hosted-git-info', commit: '486274464b81ee0c7d133929a2d693a452157788', branch: 'main',
    language: 'javascript', packageManager: 'npm', runner: 'node:test', monorepo: 'none', traits: ['no-lockfile'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'test', cell: 'Linux, node-version 22.x', node: '22.x', install: steps('npm i --ignore-scripts --no-audit --no-fund'), test: steps('npm test --ignore-scripts') },
  },
  {
    repo: 'isaacs/minipass', commit: 'ab4b3b05d0d557ac6bb178f38501b11d0c96454e', branch: 'main',
    language: 'typescript', packageManager: 'npm', runner: 'tap', monorepo: 'none', traits: ['prepare-script'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'build', cell: 'node-version 20.x, ubuntu-latest bash', node: '20.x', install: steps('npm install'), test: steps('npm test -- -c -t0') },
  },
  {
    repo: 'tj/commander.js', commit: 'ba6d13ddb4243e5913367734f8c159089ffe7834', branch: 'master',
    language: 'javascript', packageManager: 'npm', runner: 'node:test', monorepo: 'none', traits: ['and-chain'],
    ci: { workflow: '.github/workflows/tests.yml', job: 'test', cell: 'node-version 22.x, ubuntu-latest', node: '22.x', install: steps('npm ci'), test: steps('npm test', 'npm run check') },
  },
  {
    repo: 'uuidjs/uuid', commit: '70177807e9229dfacde2038dc1e722f1828f358a', branch: 'main',
    language: 'typescript', packageManager: 'npm', runner: 'node:test', monorepo: 'none', traits: ['prepare-script'],
    ci: { env: { LEFTHOOK: '0' }, workflow: '.github/workflows/ci.yml', job: 'test', cell: 'node-version 22.x', node: '22.x', install: steps('npm ci'), test: steps('npm run test', 'npm run test:node') },
  },
  {
    repo: 'eslint/rewrite', commit: 'cc71fb5bfdec53ef9d4dc8560434ab48453e4085', branch: 'main',
    language: 'javascript', packageManager: 'npm', runner: 'mocha', monorepo: 'npm-workspaces', traits: ['no-lockfile'],
    // One step "npm install and test" in the workflow: its two lines.
    ci: { workflow: '.github/workflows/ci.yml', job: 'test', cell: 'ubuntu-latest, node-version 22.x', node: '22.x', install: steps('npm install'), test: steps('npm run test:unit') },
  },
  {
    repo: 'facebook/prop-types', commit: '1c9c6311c1fb8778bffc7a1ca70c273ee8a8654d', branch: 'main',
    language: 'javascript', packageManager: 'yarn-classic', runner: 'jest', monorepo: 'none', traits: [],
    ci: {
      workflow: '.github/workflows/ci.yml', job: 'ci', cell: 'react_version 17', node: 'lts/*', tool: '1.22.22',
      install: steps('yarn install', 'yarn add react@17'),
      test: steps('yarn run pretest', 'yarn run tests-only', 'yarn run build'),
    },
  },
  {
    repo: 'graphql/dataloader', commit: 'b70dea3cc72a7e8f941133b0f486aa1840e3f927', branch: 'main',
    language: 'javascript', packageManager: 'yarn-classic', runner: 'jest', monorepo: 'none', traits: ['and-chain'],
    ci: { workflow: '.github/workflows/validation.yml', job: 'validation', cell: 'node-version 22', node: '22', tool: '1.22.22', install: steps('yarn --ignore-engines'), test: steps('yarn test:ci') },
  },
  {
    repo: 'fb55/htmlparser2', commit: '9ee7bd95614cc690d86e75e5a6260b76dcd564ea', branch: 'master',
    language: 'typescript', packageManager: 'npm', runner: 'vitest', monorepo: 'none', traits: [],
    ci: { env: { CI: 'true', FORCE_COLOR: '2' }, workflow: '.github/workflows/nodejs-test.yml', job: 'test', cell: 'node 22', node: '22', install: steps('npm ci'), test: steps('npm run build --if-present', 'npm run test:vi') },
  },
  {
    repo: 'yargs/yargs-parser', commit: '60f2db5dacde1e94f960ce0941a717f3f422f865', branch: 'main',
    language: 'typescript', packageManager: 'npm', runner: 'mocha', monorepo: 'none', traits: ['no-lockfile'],
    ci: { workflow: '.github/workflows/ci.yaml', job: 'test', cell: 'node 22', node: '22', install: steps('npm install'), test: steps('npm test', 'npm run check') },
  },
  {
    repo: 'ai/nanoid', commit: '07a39d62d84c21af5046fe6b2ef7b3e36ee557db', branch: 'main',
    language: 'javascript', packageManager: 'pnpm', runner: 'node:test', monorepo: 'none', traits: [],
    ci: { workflow: '.github/workflows/test.yml', job: 'short', cell: 'node 22', node: '22', tool: '11', install: steps('pnpm ci'), test: steps('pnpm bnt') },
  },
  {
    repo: 'postcss/postcss', commit: '8f3784702ecb4c5fdbdccf82d9c033a450aa08d5', branch: 'main',
    language: 'typescript', packageManager: 'pnpm', runner: 'uvu', monorepo: 'none', traits: [],
    ci: { workflow: '.github/workflows/test.yml', job: 'short', cell: 'node 22', node: '22', tool: '11', install: steps('pnpm ci', 'pnpm ci --ignore-scripts'), test: steps('pnpm run unit') },
  },
  {
    repo: 'unjs/defu', commit: '80c0146afb11ebd86183a579ec469f3abd976695', branch: 'main',
    language: 'typescript', packageManager: 'pnpm', runner: 'vitest', monorepo: 'none', traits: ['and-chain'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'ci', node: '22', tool: '10.33.0', install: steps('corepack enable', 'pnpm install'), test: steps('pnpm lint', 'pnpm build', 'pnpm test:types', 'pnpm vitest --coverage') },
  },
  {
    repo: 'unjs/pathe', commit: '2a558aee716f6820a199cdf5b075ef4aafb69399', branch: 'main',
    language: 'typescript', packageManager: 'pnpm', runner: 'vitest', monorepo: 'none', traits: ['and-chain'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'ci', node: '22', tool: '10.14.0', install: steps('npm i -fg corepack && corepack enable', 'pnpm install'), test: steps('pnpm lint', 'pnpm build', 'pnpm test:types', 'pnpm vitest --coverage') },
  },
  {
    repo: 'tinylibs/tinybench', commit: '52fb2be9a3e96814737283717f164aaea09d78b3', branch: 'main',
    language: 'typescript', packageManager: 'pnpm', runner: 'vitest', monorepo: 'none', traits: ['prepare-script'],
    ci: {
      workflow: '.github/workflows/qa.yml', job: 'qa-node', cell: 'node-version 22.x, ubuntu-latest', node: '22.x', tool: '11.20.0',
      install: steps('pnpm install --frozen-lockfile'),
      test: [step('pnpm build'), step('pnpm run ci:pretest', { env: { RUNTIME: 'node' } }), step('pnpm test', { env: { FORCE_COLOR: '2' } })],
    },
  },
  {
    repo: 'reduxjs/redux-thunk', commit: '184205d49f707c6f203269e0d39ad85824801816', branch: 'master',
    language: 'typescript', packageManager: 'yarn-berry-node-modules', runner: 'vitest', monorepo: 'none', traits: [],
    // The build job lints and packs; the test step is the test-dist job's, run here on the source.
    ci: { workflow: '.github/workflows/test.yml', job: 'build + test-dist', cell: 'node 22.x', node: '22.x', tool: '4.4.1', install: steps('yarn install'), test: steps('yarn lint', 'yarn test') },
  },
  {
    repo: 'arcanis/clipanion', commit: '434b5a6e0063c58b5e2f0a62498a7de0b308308f', branch: 'master',
    language: 'typescript', packageManager: 'yarn-berry-pnp', runner: 'jest', monorepo: 'yarn-workspaces', traits: [],
    ci: { workflow: '.github/workflows/nodejs.yml', job: 'build', cell: 'node-version 22.x', node: '22.x', tool: '4.4.1', install: steps('yarn'), test: steps('yarn tsc', 'yarn test', 'yarn lint') },
  },
  {
    repo: 'arcanis/typanion', commit: '2ad80a170ce6aa4808a0c2b00da951611b67b9b8', branch: 'main',
    language: 'typescript', packageManager: 'yarn-berry-pnp', runner: 'mocha', monorepo: 'yarn-workspaces', traits: ['and-chain'],
    ci: { workflow: '.github/workflows/nodejs.yml', job: 'build', cell: 'node-version 16.x', node: '16.x', tool: '4.0.0-rc.2', install: steps('yarn'), test: steps('yarn test') },
  },
  {
    repo: 'immerjs/immer', commit: '061c2425e1c9dff89e4e4189d42af1b7839dfe0a', branch: 'main',
    language: 'typescript', packageManager: 'yarn-classic', runner: 'vitest', monorepo: 'none', traits: ['and-chain'],
    ci: { workflow: '.github/workflows/test.yml', job: 'build', node: '24', tool: '1.22.22', install: steps('yarn --frozen-lockfile'), test: steps('yarn test', 'yarn coverage') },
  },
  {
    repo: 'changesets/changesets', commit: '5322174b2722b626161ca1b9c0889ede440b30b5', branch: 'main',
    language: 'typescript', packageManager: 'pnpm', runner: 'vitest', monorepo: 'pnpm-workspace', traits: [],
    // The ci-setup action installs; the test job takes the build job's dist (download-dist).
    ci: {
      workflow: '.github/workflows/ci.yml', job: 'test', cell: 'node_version 22, ubuntu-latest', node: '22', tool: '11.13.1',
      install: steps('pnpm install --frozen-lockfile', 'pnpm manypkg check', 'pnpm build'),
      test: steps('git config --global user.email "you@example.com" && git config --global user.name "Your Name"', 'pnpm test'),
    },
  },
  {
    repo: 'TanStack/store', commit: '8699e10440b8f0bb8fc655b60abd546fab7697a7', branch: 'main',
    language: 'typescript', packageManager: 'pnpm', runner: 'vitest', monorepo: 'nx', traits: [],
    // TanStack/config's setup action: Node from .nvmrc, `pnpm install --frozen-lockfile`.
    ci: { workflow: '.github/workflows/release.yml', job: 'release', node: '24.8.0', tool: '11.9.0', install: steps('pnpm install --frozen-lockfile'), test: steps('pnpm run test:ci') },
  },
  {
    repo: 'solidjs/solid', commit: 'f47845f9cc16ecbb316aa6560c7161f45af9a3d8', branch: 'main',
    language: 'typescript', packageManager: 'pnpm', runner: 'vitest', monorepo: 'turbo', traits: ['and-chain'],
    // Node from .nvmrc (24); pnpm/action-setup takes packageManager's pnpm.
    ci: { workflow: '.github/workflows/main-ci.yml', job: 'job', node: '24', tool: '9.15.0', install: steps('pnpm install'), test: steps('pnpm run build', 'pnpm run test\npnpm run coverage') },
  },
  // Python
  {
    repo: 'hukkin/tomli', commit: '920e20b1cf495b63f6d4a6aa3cd5e4ff25f5f5a7', branch: 'master',
    language: 'python', packageManager: 'pip', runner: 'unittest', monorepo: 'none', traits: ['flit'],
    ci: { env: { FORCE_COLOR: '1' }, workflow: '.github/workflows/tests.yaml', job: 'tests', cell: '3.11, ubuntu-latest', python: '3.11', install: steps('pip install .'), test: steps('python -m unittest') },
    host: { debianPackages: [], install: [], test: [step('python -m unittest', { env: { PYTHONPATH: 'src' } })], note: "Debian 12's flit_core 3.8 cannot build it (the project asks >=3.12; a string `license`): the tests run on the source tree" },
  },
  {
    repo: 'hukkin/tomli-w', commit: '1210bb6f5708a4dc084cc3deb4a3a3e3939f4d6d', branch: 'master',
    language: 'python', packageManager: 'pip', runner: 'pytest', monorepo: 'none', traits: ['flit'],
    ci: { workflow: '.github/workflows/tests.yaml', job: 'tests', cell: '3.11, ubuntu-latest', python: '3.11', install: steps('pip install . -r tests/requirements.txt'), test: steps('pytest --cov --cov-fail-under=100') },
    host: { debianPackages: ['python3-pytest-cov'], install: [], test: [step('pytest --cov --cov-fail-under=100', { env: { PYTHONPATH: 'src' } })], note: 'tests/requirements.txt from Debian: pytest, pytest-cov (pytest-randomly is not in Debian 12: file order); flit_core 3.8 cannot build it (a string `license`): the source tree' },
  },
  {
    repo: 'more-itertools/more-itertools', commit: '2fe1b2eeb9d75f994113fe3ac76d14b6bcd6fb10', branch: 'master',
    language: 'python', packageManager: 'make', runner: 'unittest', monorepo: 'none', traits: ['flit'],
    ci: { workflow: '.github/workflows/python-app.yml', job: 'build', cell: 'python-version 3.11', python: '3.11', install: [], test: steps('make coverage') },
    host: {
      debianPackages: ['python3-coverage'], install: [],
      test: steps('coverage run --include="more_itertools/*.py" -m unittest', 'coverage report --show-missing --fail-under=99'),
      note: "make coverage's own lines after its `pip install -r requirements/testing.txt` (coverage, ruff: Debian's coverage)",
    },
  },
  {
    repo: 'pytest-dev/iniconfig', commit: '71901257f6cbf660e77b1077e00f11a0f440be1e', branch: 'main',
    language: 'python', packageManager: 'hatch', runner: 'pytest', monorepo: 'none', traits: ['hatchling'],
    ci: { workflow: '.github/workflows/main.yml', job: 'build', cell: 'python 3.11, ubuntu-latest', python: '3.11', install: steps('python -m pip install --upgrade pip hatch hatch-vcs'), test: steps('hatch run +py=3.11 test:default --color=yes') },
    host: { debianPackages: [], install: [], test: [step('pytest --color=yes', { env: { PYTHONPATH: 'src' } })], note: "hatch env test:default is `pytest {args}`; Debian 12's hatchling 1.12 refuses the classifier `Python :: 3.13`: the source tree" },
  },
  {
    repo: 'python-poetry/tomlkit', commit: 'd8ed1e3cdb024dfc2c6f12b45a0dfd4d4d91f727', branch: 'master',
    language: 'python', packageManager: 'poetry', runner: 'pytest', monorepo: 'none', traits: ['poetry'],
    ci: {
      workflow: '.github/workflows/tests.yml', job: 'Tests', cell: 'ubuntu-latest, 3.11', python: '3.11',
      install: steps('pipx install poetry', 'poetry config virtualenvs.in-project true\npoetry env use python', 'poetry install'),
      test: steps('poetry run pytest -q tests'),
    },
    host: { debianPackages: ['python3-poetry-core'], install: steps('pip install --no-index --no-build-isolation .'), test: steps('pytest -q tests'), note: 'poetry-core from Debian; dev dependencies pytest, pyyaml from Debian' },
  },
  {
    repo: 'frostming/marko', commit: '0fa0b29b670feca15558652f327bc20c3baee91b', branch: 'master',
    language: 'python', packageManager: 'pdm', runner: 'pytest', monorepo: 'none', traits: ['pdm'],
    ci: { workflow: '.github/workflows/ci.yml', job: 'Testing', cell: '3.11, ubuntu-latest', python: '3.11', install: steps('pdm install -G toc -G codehilite'), test: steps('pdm run -v pytest tests') },
    host: { debianPackages: ['python3-slugify', 'python3-pygments'], install: [], test: steps('pytest tests'), note: 'pdm-backend is not in Debian 12: the tests run from the source tree (marko/ at the root)' },
  },
  {
    repo: 'mahmoud/boltons', commit: '967864f89791509f9eb36b22b4579d36b72a6df2', branch: 'master',
    language: 'python', packageManager: 'tox', runner: 'pytest', monorepo: 'none', traits: ['flit'],
    ci: { workflow: '.github/workflows/tests.yaml', job: 'tests', cell: '3.11', python: '3.11', install: [], test: steps('uvx --with tox-uv tox -e py311') },
    host: { debianPackages: ['flit'], install: steps('pip install --no-index --no-build-isolation .'), test: steps('pytest --doctest-modules boltons tests'), note: "tox testenv's `pytest --doctest-modules {site-packages}/boltons tests`, on the source tree" },
  },
  {
    repo: 'theskumar/python-dotenv', commit: 'bca6644d9aedbe287b792b756b3ae3d650cd0d3a', branch: 'main',
    language: 'python', packageManager: 'tox', runner: 'pytest', monorepo: 'none', traits: ['setuptools'],
    ci: { workflow: '.github/workflows/test.yml', job: 'test', cell: 'ubuntu-latest, 3.11', python: '3.11', install: steps('python -m pip install --upgrade pip', 'pip install tox tox-gh-actions'), test: steps('tox') },
    host: { debianPackages: ['python3-pytest-cov', 'python3-click', 'python3-sh', 'ipython3'], install: steps('pip install --no-index --no-build-isolation .'), test: steps('pytest --cov --cov-report=term-missing'), note: 'tox-gh-actions picks py311: `pytest --cov --cov-report=term-missing` with pytest, pytest-cov, click, ipython' },
  },
  {
    repo: 'arrow-py/arrow', commit: 'b247ad073d4c350270528edb5afff8e7f4f7d9e4', branch: 'master',
    language: 'python', packageManager: 'tox', runner: 'pytest', monorepo: 'none', traits: ['flit', 'addopts-plugin'],
    ci: { workflow: '.github/workflows/continuous_integration.yml', job: 'unit-tests', cell: 'ubuntu-latest, 3.11', python: '3.11', install: steps('pip install -U tox tox-gh-actions'), test: steps('tox') },
    host: {
      debianPackages: ['flit', 'python3-dateutil', 'python3-dateparser', 'python3-pytest-cov', 'python3-pytest-mock', 'python3-tz', 'python3-simplejson'],
      install: [], test: [step('pytest', { env: { PYTHONPATH: '.' } })],
      note: "tox's `pytest` with requirements-tests.txt from Debian; tox.ini's addopts name pytest-cov (--cov-branch --cov=arrow --cov-fail-under=99); flit 3.8 cannot build it (imports the module for its version): the source tree",
    },
  },
  {
    repo: 'andialbrecht/sqlparse', commit: '60cdc649726bf1bc4f1b336050560b336da715ec', branch: 'master',
    language: 'python', packageManager: 'uv', runner: 'pytest', monorepo: 'none', traits: ['hatchling'],
    ci: { workflow: '.github/workflows/python-app.yml', job: 'test', cell: 'python-version 3.11, ubuntu-latest', python: '3.11', install: [], test: steps('uv run --group dev pytest tests/') },
    host: { debianPackages: [], install: [], test: [step('pytest tests/', { env: { PYTHONPATH: '.' } })], note: "`uv run --group dev` installs the project and its dev group (pytest) first; Debian 12's hatchling 1.12 refuses the classifier `Python :: 3.13`: the source tree" },
  },
  {
    repo: 'marshmallow-code/marshmallow', commit: '341b927f219205704728c05cd61f04d7e9727523', branch: 'dev',
    language: 'python', packageManager: 'tox', runner: 'pytest', monorepo: 'none', traits: ['flit'],
    ci: { workflow: '.github/workflows/build-release.yml', job: 'tests', cell: '3.13 (py313)', python: '3.13', install: steps('python -m pip install tox'), test: steps('python -m tox -e py313') },
    host: { debianPackages: ['flit', 'python3-simplejson'], install: steps('pip install --no-index --no-build-isolation .'), test: steps('pytest'), note: "tox testenv `pytest` with extras tests (pytest, simplejson); Debian's Python is 3.11" },
  },
  {
    repo: 'pytest-dev/pluggy', commit: 'e382e72789f8d791991c489d4322aa04e660b952', branch: 'main',
    language: 'python', packageManager: 'tox', runner: 'pytest', monorepo: 'none', traits: ['setuptools'],
    ci: { workflow: '.github/workflows/test.yml', job: 'build', cell: 'ubuntu-py313 (tox_env py313)', python: '3.13', install: steps('python -m pip install --upgrade pip\npython -m pip install tox coverage'), test: [step('tox run --installpkg dist/*.whl', { env: { TOX_ENV: 'py313' } })] },
    host: { debianPackages: ['python3-setuptools-scm', 'python3-pytest-benchmark', 'python3-coverage'], install: steps('pip install --no-index --no-build-isolation .'), test: steps('pytest'), note: "tox testenv `pytest` with the testing group (pytest, pytest-benchmark, coverage); Debian's Python is 3.11" },
  },
];

/** The coverage the census must have (issue #22): every tag here appears on some repository. */
export const REQUIRED_COVERAGE = {
  language: ['javascript', 'typescript', 'python'],
  packageManager: ['npm', 'pnpm', 'yarn-classic', 'yarn-berry-pnp', 'yarn-berry-node-modules'],
  runner: ['jest', 'vitest', 'mocha', 'ava', 'tap', 'node:test', 'uvu', 'pytest', 'unittest'],
  monorepo: ['npm-workspaces', 'pnpm-workspace', 'turbo', 'nx'],
  traits: ['no-lockfile', 'and-chain', 'prepare-script', 'addopts-plugin', 'hatchling', 'flit', 'poetry', 'pdm'],
} as const;

/** What the list lacks: malformed entries and coverage tags no repository carries (empty: none). */
export function censusProblems(list: CensusRepo[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const entry of list) {
    if (!/^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/.test(entry.repo)) problems.push(`${entry.repo}: repo must be owner/name`);
    if (seen.has(entry.repo)) problems.push(`${entry.repo}: listed twice`);
    seen.add(entry.repo);
    if (!/^[0-9a-f]{40}$/.test(entry.commit)) problems.push(`${entry.repo}: commit must be a full 40-character SHA`);
    if (!entry.branch) problems.push(`${entry.repo}: branch is empty`);
    if (entry.ci.test.length === 0) problems.push(`${entry.repo}: ci.test has no step`);
    if (entry.language === 'python' ? !entry.ci.python || !entry.host : !entry.ci.node) problems.push(`${entry.repo}: ci.${entry.language === 'python' ? 'python and host' : 'node'} missing`);
  }
  const has = (key: 'language' | 'packageManager' | 'runner' | 'monorepo', value: string) => list.some((entry) => entry[key] === value);
  for (const key of ['language', 'packageManager', 'runner', 'monorepo'] as const) {
    for (const value of REQUIRED_COVERAGE[key]) if (!has(key, value)) problems.push(`no repository with ${key} ${value}`);
  }
  for (const trait of REQUIRED_COVERAGE.traits) if (!list.some((entry) => entry.traits.includes(trait))) problems.push(`no repository with trait ${trait}`);
  if (!list.some((entry) => entry.branch !== 'main')) problems.push('no repository whose default branch is not main');
  const majors = new Set(list.map((entry) => nodeMajor(entry.ci.node)).filter((major) => major !== undefined));
  for (const major of [16, 18, 20, 22, 24]) if (!majors.has(major)) problems.push(`no repository asking for Node ${major}`);
  return problems;
}

/**
 * The Node major a workflow's `node-version` means on 2026-12 (setup-node's aliases: `lts/*` and
 * `node`/`latest`/`*` are 26, Node 26 having become LTS in October 2026; `lts/-1` is 24).
 */
export function nodeMajor(version: string | undefined): number | undefined {
  if (!version) return undefined;
  const codenames: Record<string, number> = { 'lts/gallium': 16, 'lts/hydrogen': 18, 'lts/iron': 20, 'lts/jod': 22, 'lts/krypton': 24, 'lts/-1': 24, 'lts/*': 26, node: 26, latest: 26, '*': 26 };
  if (version in codenames) return codenames[version];
  const major = Number(/^v?(\d+)/.exec(version)?.[1]);
  return Number.isFinite(major) ? major : undefined;
}
