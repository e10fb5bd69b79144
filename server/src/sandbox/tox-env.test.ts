import { describe, expect, it } from 'vitest';
import { detectRecipe, type RecipeInput } from './recipe';
import { expandNames, toxEnvironment } from './tox-env';

/*
 * A CI step that runs tox, read through tox.ini (census: theskumar/python-dotenv's `tox` with
 * tox-gh-actions, arrow-py/arrow's, marshmallow's `tox -e py313`): tox would pip-install its
 * environments from an index the sandbox lacks; the environment's deps, extras and commands are
 * taken instead.
 */

const DOTENV_TOX = `[tox]
envlist = lint,py{310,311,312,313,314,314t},pypy3,manifest,coverage-report

[gh-actions]
python =
    3.10: py310
    3.11: py311
    3.13: py313, lint, manifest

[testenv]
deps =
    pytest
    pytest-cov
    click
    py{310,311,312,313,314,314t,pypy3}: ipython
    lint: ruff
commands = pytest --cov --cov-report=term-missing {posargs}
depends =
    py{310,311,312,313,314,314t},pypy3: coverage-clean

[testenv:lint]
skip_install = true
deps =
    ruff
commands =
    ruff check src tests
`;

const ARROW_TOX = `[tox]
envlist = py{py3,38,39,310,311,312,313,314}

[testenv]
deps = -r requirements/requirements-tests.txt
allowlist_externals = pytest
commands = pytest

[testenv:lint]
skip_install = true
commands = pre-commit run --all-files {posargs}
`;

const MARSHMALLOW_TOX = `[tox]
envlist = lint,py{39,310,311,312,313},mypy-marshmallow{3,4},docs

[testenv]
extras = tests
changedir = {toxinidir}
setenv = PYTHONWARNINGS = error
commands = pytest {posargs:-x tests}
`;

describe('a CI step that runs tox', () => {
  it('follows tox-gh-actions to the environment of the sandbox\'s Python, its factor-conditional deps included', () => {
    expect(toxEnvironment('tox', DOTENV_TOX, '3.11')).toEqual({
      name: 'py311',
      deps: ['pytest', 'pytest-cov', 'click', 'ipython'],
      extras: [],
      skipInstall: false,
      steps: [{ name: 'tox py311', command: 'pytest --cov --cov-report=term-missing' }],
    });
  });

  it('takes the envlist\'s environment on the sandbox\'s Python, a requirement file among its deps', () => {
    expect(toxEnvironment('tox', ARROW_TOX, '3.11')).toMatchObject({ name: 'py311', deps: ['-r requirements/requirements-tests.txt'], steps: [{ command: 'pytest' }] });
  });

  it('maps `-e py313` to the sandbox\'s Python, with extras, setenv and a posargs default', () => {
    expect(toxEnvironment('python -m tox -e py313', MARSHMALLOW_TOX, '3.11')).toEqual({
      name: 'py311',
      deps: [],
      extras: ['tests'],
      skipInstall: false,
      steps: [{ name: 'tox py311', command: 'pytest -x tests', env: { PYTHONWARNINGS: 'error' } }],
    });
    expect(toxEnvironment('tox -e lint', DOTENV_TOX, '3.11')).toMatchObject({ name: 'lint', deps: ['ruff'], skipInstall: true, steps: [{ command: 'ruff check src tests' }] });
  });

  it('leaves a step alone where tox.ini does not say (no commands, an unknown substitution, not tox)', () => {
    expect(toxEnvironment('tox', '[tox]\n', '3.11')).toBeUndefined();
    expect(toxEnvironment('tox', '[testenv]\ncommands = pytest {env:FOO}\n', '3.11')).toBeUndefined();
    expect(toxEnvironment('pytest', DOTENV_TOX, '3.11')).toBeUndefined();
    expect(expandNames('py{310,311}-django{4,5}, lint')).toEqual(['py310-django4', 'py310-django5', 'py311-django4', 'py311-django5', 'lint']);
  });

  it('the recipe runs the environment\'s commands and installs its deps and the project, not the CI\'s `pip install tox tox-gh-actions` (python-dotenv)', async () => {
    const workflow = `name: Run Tests
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.10", "3.11", "3.12"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: \${{ matrix.python-version }}
      - name: Install dependencies
        run: |
          python -m pip install --upgrade pip
          pip install tox tox-gh-actions
      - name: Test with tox
        run: tox
`;
    const files = { 'pyproject.toml': '[build-system]\nrequires = ["setuptools"]\n[project]\nname = "python-dotenv"\n', 'requirements.txt': 'bumpversion\nclick\n', 'tox.ini': DOTENV_TOX, '.github/workflows/test.yml': workflow };
    const input: RecipeInput = { repo: 'acme/dotenv', rootFiles: ['pyproject.toml', 'requirements.txt', 'tox.ini', '.github'], files };
    const recipe = await detectRecipe(input, async () => []);
    expect(recipe.test.command).toBe('pytest --cov --cov-report=term-missing');
    expect(recipe.test.source).toMatch(/test\.yml › test .*→ tox\.ini \[testenv\] py311/);
    expect(recipe.install.command).toMatch(/^python3 -m venv --system-site-packages \.venv && \{ \.venv\/bin\/pip install -q pytest pytest-cov click ipython \|\| \.venv\/bin\/python \/tmp\/dockhand\/python-requirements\.py pytest pytest-cov click ipython; \} && \{ \.venv\/bin\/pip install -q --no-build-isolation -e \. \|\| /);
    expect(recipe.install.command).not.toMatch(/bumpversion|requirements\.txt|tox-gh-actions/);
  });
});
