/*
 * What one `run:` step of a CI job is: an install (npm, pnpm, yarn, pip: the sandbox can run it
 * as written), another install (a script, uv, poetry: it cannot), the runner's set-up (echo,
 * corepack, sudo, uploads), or a test or check. Read from its lines and its name; pure.
 */

/** A command that runs tests: a test script, a runner, tox / nox, `make test`, `scripts/test`, a `validate` script (kcd-scripts: lint, test and build). */
export const TEST_COMMAND = /(?:^|[\s;&|(/'"])(?:tests?(?:[:_-][\w:.-]*)?|vitest|jest|mocha|ava|tap|tape|uvu|pytest|py\.test|tox|nox|unittest|c8|nyc|node --test|make (?:check|ci|unit|coverage)|unit|specs?|(?:npm|pnpm|yarn)(?:\s+run)?\s+validate)(?=$|[\s;&|)'"])/m;
/**
 * A line that lints, formats, type-checks or builds: a check, never a test, whatever paths it names
 * (`flake8 src tests`, `eslint lib test`, `mypy tests`, `tsc -p test`, `npm run build`), and tox /
 * nox run only for such environments (`tox -e lint,mypy`, `nox -s format`). Census: a lint step's
 * `tests` argument made it a test step, recorded as a pre-existing failure at the base.
 */
const LINTER = String.raw`(?:flake8|ruff|black|isort|mypy|pyright|pylint|pycodestyle|pydocstyle|pyflakes|bandit|codespell|pre-commit|prek|eslint|prettier|xo|standard|biome|oxlint|stylelint|markdownlint(?:-cli2?)?|tslint|tsc|tsd|vue-tsc|attw|publint|dprint|knip|depcheck|madge|commitlint|check-manifest|twine|build|sphinx-build|mkdocs)`;
const CHECK_ENV = String.raw`(?:lint|linting|linters?|style|format|formatting|fmt|flake8|ruff|black|isort|mypy|pyright|pylint|typecheck|type-check|types?|typing|docs?|pre-commit|pep8|packaging|manifest|check-manifest|build|readme|spell(?:ing|check)?)(?:-[\w.-]+)?`;
const CHECK_SEGMENT = new RegExp(
  String.raw`^(?:(?:npx|exec|time|env|pnpm\s+exec|yarn\s+exec|uv\s+run|poetry\s+run|pdm\s+run|(?:python3?\s+-m))\s+)*${LINTER}(?:\s|$)` +
    String.raw`|^(?:npm|pnpm|yarn)(?:\s+(?:run|run-script))?\s+(?:-\S+\s+)*(?:lint|lint:[\w:.-]+|format|format:[\w:.-]+|fmt|prettier|eslint|typecheck|type-check|types|tsc|check-types|build|build:[\w:.-]+|compile|docs?)(?:\s|$)` +
    String.raw`|^(?:python3?\s+-m\s+)?(?:tox(?:\s+(?:run|r))?\s+(?:-\S+\s+)*-e\s*|nox\s+(?:-\S+\s+)*-s\s*)${CHECK_ENV}(?:,${CHECK_ENV})*(?:\s|$)` +
    String.raw`|^make\s+(?:lint|format|fmt|style|typecheck|mypy|docs?|build)(?:\s|$)`,
);

/** The commands of one line (`a && b; c | d`), each with its `VAR=x` prefix taken off. */
function segments(line: string): string[] {
  return line
    .split(/\s*(?:&&|\|\||;|\|)\s*/)
    .map((part) => part.trim().replace(/^(?:[A-Za-z_]\w*=\S*\s+)+/, ''))
    .filter(Boolean);
}

/**
 * Does the text run tests: a command of it that is a test command and not a lint, build or install
 * line. The text may be a step as the feedback engine names it (`Lint with flake8: flake8 src tests`).
 */
export function runsTestCommand(text: string): boolean {
  const named = (part: string): string => part.replace(/^[^:'"]*:\s+/, '');
  return scriptLines(text).some((line) => segments(line).some((part) => TEST_COMMAND.test(part) && ![part, named(part)].some((command) => CHECK_SEGMENT.test(command) || INSTALL_LINE.test(command))));
}

/** Is every command of the line a lint, format, type-check or build (see CHECK_SEGMENT)? */
export function isCheckLine(line: string): boolean {
  const parts = segments(line);
  return parts.length > 0 && parts.every((part) => CHECK_SEGMENT.test(part));
}

export const INSTALL_LINE = /^(?:npm\s+(?:ci|install|i)(?:\s|$)|pnpm\s+(?:install|i|add)(?:\s|$)|yarn\s+add\s|yarn(?:\s+install)?(?:\s+--?[\w-]+(?:=\S+)?)*\s*$|(?:python3?\s+-m\s+)?pip3?\s+install\s)/;
const OTHER_INSTALL_LINE = /^(?:bun\s+install|uv\s+(?:sync|pip\s+install)|poetry\s+install|pdm\s+(?:install|sync)|pipenv\s+(?:install|sync)|pip-sync|hatch\s+env|\.?\/?scripts\/(?:install|bootstrap|setup)|make\s+(?:install|deps|setup|dev)\b|deno\s+install|(?:npx|pnpm\s+exec|yarn)\s+playwright\s+install|playwright\s+install|node\s+\S*puppeteer\S*install)/;
/** Lines that set up the runner or print, neither install nor check (a step of only these is left out). */
export const SETUP_LINE = /^(?:echo|printf|ls|cat|pwd|env|printenv|date|which|type|whoami|uname|df|free|nproc|node\s+(?:-v|--version|-p)|npm\s+(?:-v|--version|config|set)|pnpm\s+(?:-v|--version|config|store)|yarn\s+(?:-v|--version|config)|python3?\s+(?:-VV?|--version|-m\s+site)|pip3?\s+(?:--version|list|freeze|config)|(?:python3?\s+-m\s+)?pip3?\s+install\s+(?:(?:-U|--upgrade|-q|--quiet)\s+)*(?:pip|setuptools|wheel)(?:\s+(?:pip|setuptools|wheel))*\s*$|(?:npm|pnpm)\s+(?:-\S+\s+)*(?:ls|list)\b|.*>>?\s*"?\$\{?GITHUB_(?:OUTPUT|ENV|PATH|STEP_SUMMARY)\b|yarn\s+list\b|git\s+(?:config|fetch|status|log|--version|submodule)|corepack|nvm\s|sudo|apt(?:-get)?\s|brew\s|choco\s|mkdir|chmod|export\s|set\s+[-+]|pnpm\s+(?:i|install|add)\s+(?:-g|--global)|npm\s+(?:i|install|add)\s+(?:-\S+\s+)*(?:npm|pnpm|yarn|corepack)(?:@\S*)?(?:\s+(?:-\S+|(?:npm|pnpm|yarn|corepack)(?:@\S*)?))*\s*(?:$|&&|;)|yarn\s+global|codecov|coveralls|(?:npx\s+)?nx-cloud\s|bash\s+<\(curl|curl\s|wget\s|gh\s)/;
/**
 * A global npm install (`npm install -g c8`, `npm i -fg nyc`): an install step the snapshot build
 * runs into the sandbox's global prefix (NPM_GLOBAL_PREFIX). One of package managers only (`npm i
 * -g pnpm@8`, `npm install -g npm@latest`) is the runner's set-up: the recipe's toolchains give them.
 */
const GLOBAL_NPM_INSTALL = /^npm\s+(?:i|install|add)\s(?=(?:[^&;|]*\s)?(?:-g|--global|-fg|-gf)(?:\s|$))/;
const PACKAGE_MANAGER_ONLY = /^(?:npm|pnpm|yarn|corepack)(?:@\S*)?$/;

export function isGlobalInstall(line: string): boolean {
  const command = commandLines(line)[0] ?? '';
  if (!GLOBAL_NPM_INSTALL.test(command)) return false;
  const packages = (command.split(/&&|;|\|/)[0] ?? '').trim().split(/\s+/).slice(2).filter((word) => !word.startsWith('-'));
  return packages.length > 0 && !packages.every((name) => PACKAGE_MANAGER_ONLY.test(name));
}

/**
 * An install line, also under a condition on a file (GitHub's Python template: `if [ -f
 * requirements.txt ]; then pip install -r requirements.txt; fi`), which the install keeps as written.
 */
export function isInstallLine(line: string): boolean {
  if (INSTALL_LINE.test(line)) return !SETUP_LINE.test(line);
  const guarded = /^if\s+\[\s+-[fes]\s+\S+\s+\];?\s*then\s+(.+?);?\s*fi$/.exec(line)?.[1];
  return guarded !== undefined && guarded.split(/\s*;\s*/).every((part) => INSTALL_LINE.test(part) && !SETUP_LINE.test(part));
}

/** Launchers the sandbox does not have: a test step that needs one rules the job out. */
export const MISSING_TOOL = /^(?:bun|bunx|deno|uv|uvx|poetry|pdm|hatch|rye|pixi|pipx|conda|mamba|micromamba|nix|docker|docker-compose)$/;
/** A coverage upload (a line of it makes the whole step one): left out as the brief's uploads are. */
const UPLOAD_LINE = /(?:codecov|coveralls|codacy|bash\s+<\(curl|curl\s.*\|\s*(?:ba)?sh\b)/;
/**
 * A coverage report written from an earlier run's data (`c8 report`, `nyc report`, `coverage xml`,
 * `genhtml`): it feeds an upload, runs no test and checks nothing, so a step of these is set-up.
 * `coverage report --fail-under=N` fails the CI and stays a check (not a test).
 */
const REPORT_LINE = /^(?:(?:npx|exec)\s+)?(?:(?:c8|nyc)\s+report\b|(?:python3?\s+-m\s+)?coverage\s+(?:xml|html|lcov|json|combine|report)\b(?!.*--fail-under)|genhtml\b)/;
/** Coverage bookkeeping: a report or a threshold check, neither of which runs a test. */
const COVERAGE_ONLY_LINE = /^(?:(?:npx|exec)\s+)?(?:(?:c8|nyc)\s+(?:report|check-coverage)\b|(?:python3?\s+-m\s+)?coverage\s+(?!run\b)|genhtml\b)/;
/** A step called "Run tests" runs tests whatever its command (`make ci`, `npm run unit`); "Install test dependencies" does not. */
export const TEST_NAME = /^(?:run\s+(?:the\s+)?)?(?:unit\s+|all\s+)?(?:tests?|testing|pytest|specs?)\b|\b(?:tests?|specs?)$/i;
export const NOT_TEST_NAME = /\b(?:install|installs|set ?up|dependencies|deps|upload|publish|publication|release|deploy|build|skip|skipping|lint|linting|linter|format|formatting|typecheck|type-check|type check|types)\b/i;
const INSTALL_NAME = /\b(?:install|dependencies|deps|bootstrap)\b/i;

/** The logical lines of a `run:` script (continuations joined), comments and blanks dropped. */
export function scriptLines(run: string): string[] {
  return run
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** The commands of a script's lines, `cd dir &&` and `VAR=x` prefixes taken off (what classifies a step). */
export function commandLines(run: string): string[] {
  return scriptLines(run).map((line) => line.replace(/^(?:cd\s+\S+\s*&&\s*)+/, '').replace(/^(?:[A-Za-z_]\w*=\S*\s+)+/, ''));
}

export type StepKind = 'install' | 'other-install' | 'setup' | 'check';

export function classify(run: string, name: string): StepKind {
  const lines = commandLines(run);
  const setupOrInstall = (line: string): boolean => isInstallLine(line) || INSTALL_LINE.test(line) || SETUP_LINE.test(line) || UPLOAD_LINE.test(line) || REPORT_LINE.test(line);
  // Installing Node itself with nvm (jshttp's "Install Node.js" scripts) is the runner's set-up: the recipe's toolchain is the Node.
  if (lines.some((line) => /^nvm\s+(?:install|use)\b/.test(line)) && !lines.some((line) => (INSTALL_LINE.test(line) && !SETUP_LINE.test(line)) || TEST_COMMAND.test(line))) return 'setup';
  if (INSTALL_NAME.test(name) && !runsTestCommand(run) && !lines.every(setupOrInstall)) return 'other-install';
  if (lines.some((line) => OTHER_INSTALL_LINE.test(line)) && !lines.some((line) => TEST_COMMAND.test(line) && !INSTALL_LINE.test(line))) return 'other-install';
  // An install step keeps only its install lines (a download or an upload beside them is the runner's).
  if (lines.some(isInstallLine) && lines.every(setupOrInstall)) return 'install';
  if (lines.some((line) => UPLOAD_LINE.test(line))) return 'setup';
  return lines.every((line) => SETUP_LINE.test(line) || REPORT_LINE.test(line)) ? 'setup' : 'check';
}

/** Does a check step run tests: a test command on a line that is not coverage bookkeeping, or a name that says so. */
export function runsTests(command: string, name: string): boolean {
  const lines = commandLines(command);
  if (lines.length > 0 && lines.every(isCheckLine)) return false;
  return lines.some((line) => runsTestCommand(line) && !COVERAGE_ONLY_LINE.test(line)) || (TEST_NAME.test(name) && !NOT_TEST_NAME.test(name));
}

/** The tool a line starts with, after `cd`, env assignments and `npx`. */
export function launcherOf(line: string): string {
  return line.replace(/^(?:npx|exec|time|env)\s+/, '').split(/\s+/)[0] ?? '';
}
