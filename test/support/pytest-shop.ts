import type { EnvironmentRecipe } from '@dockhand/protocol';

/*
 * A small pytest repository for the verified stop and grading (server/src/agent/verify-ran*.test.ts,
 * server/src/eval/grade.test.ts): `shop.price.discount` divides a percent by 10; with
 * `UNCOLLECTABLE` added, pytest stops at collection and runs no test, as a repository new to
 * Dockhand did (issue 27): a test importing a module nobody installed, and an import-time warning
 * under `filterwarnings = error`.
 */

export const SHOP_FILES: Record<string, string> = {
  'pyproject.toml': '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\nfilterwarnings = ["error"]\n',
  'shop/__init__.py': '',
  // The bug: a percent divided by 10.
  'shop/price.py': 'def discount(price, percent):\n    return price - price * percent / 10\n',
  'tests/test_price.py': 'from shop.price import discount\n\n\ndef test_discount():\n    assert discount(200, 10) == 180\n\n\ndef test_no_discount():\n    assert discount(50, 0) == 50\n',
};

/** What stops pytest at collection. */
export const UNCOLLECTABLE: Record<string, string> = {
  'tests/test_report.py': 'import reportlab_missing\n\n\ndef test_report():\n    assert reportlab_missing.render() == "ok"\n',
  'tests/test_legacy.py': 'import warnings\n\nwarnings.warn("the legacy API is deprecated", DeprecationWarning)\n\n\ndef test_legacy():\n    assert True\n',
};

export const FIX = { name: 'edit_file', input: { path: 'shop/price.py', command: 'replace', old_text: 'percent / 10\n', new_text: 'percent / 100\n' } };
export const TICKET = { kind: 'text' as const, title: 'discount() is ten times too large', body: 'discount(200, 10) should be 180.' };

export function pytestRecipe(repo: string): EnvironmentRecipe {
  return {
    repo,
    python: { requirements: [], source: 'pyproject.toml' },
    install: { command: 'true', source: 'default' },
    lifecycleScripts: true,
    skipScripts: [],
    egressHosts: [],
    test: { command: 'python3 -m pytest', source: 'pyproject.toml' },
  };
}

/** The fix as a unified diff (a prediction's model_patch). */
export const FIX_PATCH =
  'diff --git a/shop/price.py b/shop/price.py\n--- a/shop/price.py\n+++ b/shop/price.py\n@@ -1,2 +1,2 @@\n def discount(price, percent):\n-    return price - price * percent / 10\n+    return price - price * percent / 100\n';
