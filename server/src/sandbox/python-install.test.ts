import { describe, expect, it } from 'vitest';
import { detectRecipe, RECIPE_FILES, type RecipeInput } from './recipe';
import { bestEffort, SOURCE_TREE_FALLBACK, tableKeys } from './python-install';

/*
 * A Python project's install for its test job when no CI says otherwise: the test dependencies it
 * keeps outside the root's requirements*.txt are installed too (issue 27, item 5).
 */

const versions = async (): Promise<string[]> => [];

function repo(files: Record<string, string>): RecipeInput {
  const rootFiles = [...new Set(Object.keys(files).map((path) => path.split('/')[0] ?? path))];
  return { repo: 'acme/lib', rootFiles, files };
}

const HATCHLING = '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n[project]\nname = "lib"\nversion = "0.1.0"\n';

describe('test dependencies outside the root', () => {
  it('installs tests/requirements.txt and requirements/test.txt, which detection reads', async () => {
    expect(RECIPE_FILES).toEqual(expect.arrayContaining(['tests/requirements.txt', 'requirements/test.txt']));
    const recipe = await detectRecipe(repo({ 'pyproject.toml': HATCHLING, 'tests/requirements.txt': 'pytest-cov\n', 'requirements/test.txt': 'hypothesis\n', 'requirements-dev.txt': 'pytest-mock\n' }), versions);
    expect(recipe.install.command).toBe(
      `python3 -m venv --system-site-packages .venv && { .venv/bin/pip install -q -r requirements-dev.txt -r tests/requirements.txt -r requirements/test.txt || ${bestEffort(['requirements-dev.txt', 'tests/requirements.txt', 'requirements/test.txt'])}; } && { .venv/bin/pip install -q --no-build-isolation -e . || ${SOURCE_TREE_FALLBACK}; }`,
    );
    expect(recipe.python?.requirements).toEqual(['requirements-dev.txt', 'tests/requirements.txt', 'requirements/test.txt']);
  });

  it('installs the project with its test extra, else its dev extra', async () => {
    const withTest = `${HATCHLING}\n[project.optional-dependencies]\ndocs = ["sphinx"]\ntest = [\n  "pytest-cov",\n  "pytest-xdist",\n]\n\n[tool.hatch.build]\nexclude = ["x"]\n`;
    expect((await detectRecipe(repo({ 'pyproject.toml': withTest }), versions)).install.command).toContain(".venv/bin/pip install -q --no-build-isolation -e '.[test]'");
    const withDev = `${HATCHLING}\n[project.optional-dependencies]\ndev = ["pytest-cov"]\n`;
    expect((await detectRecipe(repo({ 'pyproject.toml': withDev }), versions)).install.command).toContain("-e '.[dev]'");
    expect((await detectRecipe(repo({ 'pyproject.toml': HATCHLING }), versions)).install.command).toMatch(/-e \. \|\| /);
  });

  it('installs a [dependency-groups] test group through the helper the build writes', async () => {
    const groups = `${HATCHLING}\n[dependency-groups]\ntest = ["pytest-cov", { include-group = "lint" }]\nlint = ["ruff"]\n`;
    const recipe = await detectRecipe(repo({ 'pyproject.toml': groups }), versions);
    expect(recipe.install.command).toContain(`.venv/bin/python /tmp/dockhand/dependency-groups.py test > /tmp/dockhand/dependency-groups.txt && { .venv/bin/pip install -q -r /tmp/dockhand/dependency-groups.txt || ${bestEffort(['/tmp/dockhand/dependency-groups.txt'])}; }`);
  });

  it("environment.yml's python.requirements is all that is installed from requirement files", async () => {
    const recipe = await detectRecipe(repo({ 'pyproject.toml': HATCHLING, 'tests/requirements.txt': 'pytest-cov\n', '.dockhand/environment.yml': 'python:\n  requirements: [requirements.txt]\n' }), versions);
    expect(recipe.python?.requirements).toEqual(['requirements.txt']);
    expect(recipe.install.command).not.toContain('tests/requirements.txt');
  });

  it('reads the keys of one TOML table, quoted or not, up to the next header', () => {
    expect(tableKeys('[project]\nname = "x"\n[project.optional-dependencies]\n"test" = []\ndev=[\n "a",\n]\n[tool.x]\ntest = 1\n', 'project.optional-dependencies')).toEqual(['test', 'dev']);
    // pyproject-fmt's dotted keys under [project] (python-humanize/humanize's pyproject.toml).
    expect(tableKeys('[project]\nname = "humanize"\noptional-dependencies.tests = [\n  "freezegun",\n]\nurls.Homepage = "x"\n[tool.hatch]\n', 'project.optional-dependencies')).toEqual(['tests']);
  });
});
