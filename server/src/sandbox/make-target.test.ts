import { describe, expect, it } from 'vitest';
import { makeTarget, pipArguments } from './make-target';
import { detectRecipe, type RecipeInput } from './recipe';

/*
 * A CI step `make <target>` whose recipe pip-installs before testing (census
 * more-itertools/more-itertools: `make coverage` failed at the base with exit 2, its pip line
 * having no network in the test run): the pip lines go to the build, the other lines are the steps.
 */

const MAKEFILE = `.PHONY: all-checks
all-checks: requirements coverage check

.PHONY: coverage
coverage:
\tpython -m pip install --upgrade -r requirements/testing.txt
\tcoverage run --include="more_itertools/*.py" -m unittest
\tcoverage report --show-missing --fail-under=99

.PHONY: test
test:
\tpython -m unittest -v \${tests}
`;

const WORKFLOW = `name: Python application
on: [push, pull_request]
jobs:
  build:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python-version: ["3.9", "3.11", "3.13"]
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: \${{ matrix.python-version }}
      - name: Run tests
        run: make coverage
`;

describe('a CI step that runs a Makefile target', () => {
  it('splits the target into its pip installs and its test lines', () => {
    expect(makeTarget('make coverage', MAKEFILE)).toEqual({
      target: 'coverage',
      installs: ['python -m pip install --upgrade -r requirements/testing.txt'],
      steps: [
        { name: 'make coverage', command: 'coverage run --include="more_itertools/*.py" -m unittest' },
        { name: 'make coverage', command: 'coverage report --show-missing --fail-under=99' },
      ],
    });
    expect(pipArguments('python -m pip install --upgrade -r requirements/testing.txt coverage>=7')).toEqual(['-r', 'requirements/testing.txt', 'coverage>=7']);
  });

  it('leaves a target alone that make would expand, that has prerequisites, that installs nothing, or that is missing', () => {
    expect(makeTarget('make test', MAKEFILE)).toBeUndefined();
    expect(makeTarget('make all-checks', MAKEFILE)).toBeUndefined();
    expect(makeTarget('make check', 'check:\n\truff check .\n')).toBeUndefined();
    expect(makeTarget('make nothing', MAKEFILE)).toBeUndefined();
  });

  it("the recipe installs the target's pip lines in the build and runs its other lines as the steps (more-itertools)", async () => {
    const files = { 'pyproject.toml': '[build-system]\nrequires = ["flit_core"]\nbuild-backend = "flit_core.buildapi"\n[project]\nname = "more-itertools"\n', Makefile: MAKEFILE, '.github/workflows/python-app.yml': WORKFLOW };
    const input: RecipeInput = { repo: 'acme/more', rootFiles: ['pyproject.toml', 'Makefile', '.github'], files };
    const recipe = await detectRecipe(input, async () => []);
    expect(recipe.test.steps?.map((step) => step.command)).toEqual(['coverage run --include="more_itertools/*.py" -m unittest', 'coverage report --show-missing --fail-under=99']);
    expect(recipe.test.source).toMatch(/Run tests.*→ Makefile coverage \(its pip installs run in the build\)/);
    expect(recipe.install.command).toMatch(/&& \{ \.venv\/bin\/pip install --upgrade -r requirements\/testing\.txt \|\| \.venv\/bin\/python \/tmp\/dockhand\/python-requirements\.py -r requirements\/testing\.txt; \}$/);
  });
});
