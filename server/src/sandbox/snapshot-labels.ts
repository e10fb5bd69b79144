import { EnvironmentRecipe } from '@dockhand/protocol';
import { z } from 'zod';
import { DockhandError } from '../errors';
import type { ToolchainMount } from './toolchains';

/*
 * What a snapshot image says about itself. The key (the image tag) already covers the
 * repository and the recipe; the labels repeat both so that every consumer (resolve, the
 * driver, the warm pool) checks them against the request and refuses an image made for another
 * repository or recipe, whatever its tag. Images without the current key version (built under
 * the old, lockfile-only fingerprint) are never used.
 */

/**
 * Bumped whenever what the key covers changes, or what every build puts in the image; images of
 * other versions are never reused. 3: the workspace's `.git/info/exclude` lists test runners'
 * output (`.nyc_output/`, `.tap/`), which images of 2 lack. 4: a Python build's .venv/bin has the
 * bare names of Debian's python3-* commands (`coverage`). 5: and a name for each of Debian's
 * `#!/usr/bin/python3` commands (`pytest`), run by the venv's Python. 6: a berry build's CA
 * variable follows the committed yarnPath release (a failed build of 5 is not reused). 7: a pnpm
 * build gives pnpm 11 its settings as pnpm_config_* (tinybench's failed build of 6 is not reused).
 * 8: the workspace has an `origin` remote and `origin/<default branch>` (workspace.ts).
 */
export const SNAPSHOT_KEY_VERSION = '8';

export const SNAPSHOT_LABELS = {
  snapshot: 'dockhand.snapshot',
  keyVersion: 'dockhand.snapshot.key-version',
  key: 'dockhand.snapshot.key',
  sha: 'dockhand.snapshot.sha',
  repo: 'dockhand.snapshot.repo',
  recipe: 'dockhand.snapshot.recipe',
  /** The resolved recipe, base64 of its JSON (read back into `Sandbox.environment`). */
  environment: 'dockhand.snapshot.environment',
} as const;

/** The repository and recipe a sandbox is requested for; driver and pool check images against it. */
export interface SnapshotIdentity {
  repo: string;
  /** sha256 (16 hex) of the canonical JSON of the recipe. */
  recipeHash: string;
  environment: EnvironmentRecipe;
  toolchains: ToolchainMount[];
}

const Labels = z.record(z.string(), z.string()).nullish();

export function snapshotLabelValues(input: { key: string; sha: string; identity: SnapshotIdentity }): Record<string, string> {
  return {
    [SNAPSHOT_LABELS.snapshot]: '1',
    [SNAPSHOT_LABELS.keyVersion]: SNAPSHOT_KEY_VERSION,
    [SNAPSHOT_LABELS.key]: input.key,
    [SNAPSHOT_LABELS.sha]: input.sha,
    [SNAPSHOT_LABELS.repo]: input.identity.repo,
    [SNAPSHOT_LABELS.recipe]: input.identity.recipeHash,
    [SNAPSHOT_LABELS.environment]: Buffer.from(JSON.stringify(input.identity.environment)).toString('base64'),
  };
}

/** A Dockerfile LABEL instruction (for `docker commit --change`): values quoted, `$` and `"` escaped. */
export function labelInstruction(labels: Record<string, string>): string {
  const quote = (value: string): string => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\$/g, '\\$').replace(/\n/g, ' ')}"`;
  return `LABEL ${Object.entries(labels)
    .map(([key, value]) => `${key}=${quote(value)}`)
    .join(' ')}`;
}

export interface SnapshotLabels {
  sha: string;
  repo: string;
  recipeHash: string;
  environment: EnvironmentRecipe | undefined;
}

/** The snapshot labels of an image, or undefined when it is not a snapshot of the current key version. */
export function readSnapshotLabels(raw: unknown): SnapshotLabels | undefined {
  const labels = Labels.parse(raw) ?? {};
  if (labels[SNAPSHOT_LABELS.keyVersion] !== SNAPSHOT_KEY_VERSION) return undefined;
  const sha = labels[SNAPSHOT_LABELS.sha];
  const repo = labels[SNAPSHOT_LABELS.repo];
  const recipeHash = labels[SNAPSHOT_LABELS.recipe];
  if (!sha || repo === undefined || !recipeHash) return undefined;
  let environment: EnvironmentRecipe | undefined;
  const encoded = labels[SNAPSHOT_LABELS.environment];
  if (encoded) {
    try {
      const parsed = EnvironmentRecipe.safeParse(JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')));
      if (parsed.success) environment = parsed.data;
    } catch {
      environment = undefined;
    }
  }
  return { sha, repo, recipeHash, environment };
}

/** Throws unless the image's labels are a current-version snapshot of exactly this repository and recipe. */
export function checkSnapshotLabels(image: string, raw: unknown, expected: { repo: string; recipeHash: string }): SnapshotLabels {
  const labels = readSnapshotLabels(raw);
  if (!labels) {
    throw new DockhandError('sandbox_unavailable', `image ${image} is not a snapshot of key version ${SNAPSHOT_KEY_VERSION} (built under an older key, or not a snapshot); it is not used`, {
      hint: 'the snapshot is rebuilt under the current key',
    });
  }
  if (labels.repo !== expected.repo) {
    throw new DockhandError('sandbox_unavailable', `image ${image} belongs to repository "${labels.repo}", not "${expected.repo}"; refusing to start it`);
  }
  if (labels.recipeHash !== expected.recipeHash) {
    throw new DockhandError('sandbox_unavailable', `image ${image} was built for environment recipe ${labels.recipeHash}, not ${expected.recipeHash}; refusing to start it`);
  }
  return labels;
}
