import { pythonIndexBase, type PrivateRegistry, type PythonIndexRecipe } from './private-registries';
import type { SnapshotIdentity } from './snapshot-labels';

/**
 * pip through the registry front (issue 25). A repository's own Python index
 * (`.dockhand/environment.yml` `pythonIndex`) is served by the same per-build listener as its npm
 * registries, under the path prefix `/-/pip/` (npm never asks for it: `/-/` is the registry's own
 * namespace, and no npm name starts with `-`): `/-/pip/<path>` is `<path>` under the index's base
 * (its simple URL less `simple/`), asked with HTTP Basic from the secret. The build's pip gets
 * `PIP_INDEX_URL=<front>/-/pip/simple/` and nothing else of the index: its simple pages have their
 * absolute file links at the index pointed back at the front (relative links resolve there on
 * their own), so every file comes through the front too, and nothing of it is kept
 * (`dep-cache-private.ts`, the npm path's relay).
 *
 * It will not: follow a file link to another host with the credential (pip fetches such a link
 * itself, through the egress proxy, with no credential), nor serve the prefix to a build whose
 * repository names no Python index (404).
 */

/** The front's path prefix for the repository's Python index. */
export const PIP_FRONT_PREFIX = '/-/pip/';

/** Whether this build's pip installs through the front: a Python recipe that names a Python index. */
export function pipThroughFront(identity: SnapshotIdentity): boolean {
  return identity.environment.pythonIndex !== undefined && identity.environment.python !== undefined;
}

/** The repository's Python index among the build's registries, if it has one. */
export function pythonIndexOf(registries: readonly PrivateRegistry[]): PrivateRegistry | undefined {
  return registries.find((registry) => registry.kind === 'python-index');
}

/** Where the front serves the index's base for a listener at `frontUrl`. */
export function pipFrontBase(frontUrl: string): string {
  return `${frontUrl.replace(/\/?$/, '')}${PIP_FRONT_PREFIX}`;
}

/** pip's index URL at the front: `<front>/-/pip/` plus the index's simple path under its base (`simple/`). */
export function pipIndexUrlAtFront(frontUrl: string, index: PythonIndexRecipe): string {
  const url = new URL(index.url);
  const base = pythonIndexBase(url).pathname;
  const simple = url.pathname.replace(/\/?$/, '/').slice(base.length);
  return `${pipFrontBase(frontUrl)}${simple}`;
}

/**
 * The install's pip settings: the front as the index (the fleet's `DOCKHAND_PIP_INDEX_URL`, when
 * set, as an extra index for public packages), plain http to the front outside the CONNECT proxy
 * and trusted (pip skips an untrusted plain-http index with a warning and finds nothing).
 * Build isolation stays as the fleet's index decides it: off without one (the repository's index
 * may hold no build backends), so `setup.py`/`pyproject` builds use the image's.
 */
export function pipFrontEnvironment(env: Record<string, string>, frontUrl: string, index: PythonIndexRecipe, fleetIndexUrl: string | undefined): void {
  env.PIP_INDEX_URL = pipIndexUrlAtFront(frontUrl, index);
  delete env.PIP_NO_INDEX;
  // On a 401 (a wrong secret) pip would wait for a user name on its stdin until the install's timeout.
  env.PIP_NO_INPUT = '1';
  if (fleetIndexUrl) env.PIP_EXTRA_INDEX_URL = fleetIndexUrl;
  else env.PIP_NO_BUILD_ISOLATION = '0';
  const host = new URL(frontUrl).hostname;
  // pip ignores an index on plain http ('not a trusted or secure host') unless it is trusted: the front is the build network's gateway.
  env.PIP_TRUSTED_HOST = host;
  const noProxy = [...new Set([...(env.NO_PROXY ?? '').split(','), host].filter(Boolean))].join(',');
  Object.assign(env, { NO_PROXY: noProxy, no_proxy: noProxy });
}
