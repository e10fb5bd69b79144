import type Docker from 'dockerode';
import { DockhandError } from '../errors';
import type { DockerSandbox } from './docker-sandbox';
import type { RegistryCredentials } from './private-registries';

/**
 * Setup secrets: `.dockhand/environment.yml` `secrets: [NAME, …]` are given to `.dockhand/setup.sh`
 * only. The build script reads them from its stdin before anything runs (into a shell variable
 * that is never exported, so the install's processes do not inherit it), and just before
 * setup.sh writes each to `/run/dockhand-secrets/NAME` (a tmpfs owned by the build user: never in
 * `docker commit`'s layer) with `NAME_FILE` pointing at it. Their values are masked in the build
 * log, and after the step the committed layer's changed files are searched for every value, its
 * base64 and URL-encoded forms: a hit fails the build naming the file, never the value.
 *
 * Not covered: a process the install leaves running as the same user could read the files while
 * setup.sh runs, and a value written compressed or otherwise encoded is not recognised.
 */
export const SETUP_SECRETS_DIR = '/run/dockhand-secrets';
/** The tmpfs mount for `HostConfig.Tmpfs`: the build user's alone, small, no programs run from it. */
export const SETUP_SECRETS_TMPFS = 'rw,noexec,nosuid,nodev,size=1m,mode=0700,uid=1000,gid=1000';

export interface SetupSecret {
  name: string;
  value: string;
}

/** The values' shortest form searched for: shorter ones would match ordinary text. */
const MINIMUM_FORM_LENGTH = 6;

/** The values of the secrets setup.sh asks for, or an error naming the missing ones and the command that sets each. */
export async function resolveSetupSecrets(input: { repo: string; usedBy: string; names: readonly string[]; credentials: RegistryCredentials | undefined }): Promise<SetupSecret[]> {
  if (input.names.length === 0) return [];
  const field = '.dockhand/environment.yml:secrets';
  if (!input.credentials) throw new DockhandError('sandbox_unavailable', `.dockhand/environment.yml names setup secrets (${input.names.join(', ')}), but this server holds no repository secrets`, { field });
  const { values, missing } = await input.credentials(input.repo, input.names, input.usedBy);
  if (missing.length > 0) {
    throw new DockhandError('sandbox_unavailable', `${input.repo} has no secret ${missing.join(', ')}, which .dockhand/environment.yml gives to .dockhand/setup.sh`, {
      field: missing[0] ?? field,
      hint: missing.map((name) => `dockhand secret set ${input.repo} ${name} --from-file <file>`).join('; '),
    });
  }
  return input.names.map((name) => ({ name, value: values.get(name) ?? '' }));
}

/** The forms of a value searched for and masked: raw (each line of a multi-line value), base64, base64url and URL-encoded. */
export function secretForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const forms = [...value.split(/\r?\n/), bytes.toString('base64'), bytes.toString('base64').replace(/=+$/, ''), bytes.toString('base64url'), encodeURIComponent(value)];
  return [...new Set(forms.map((form) => form.trim()).filter((form) => form.length >= MINIMUM_FORM_LENGTH))].sort((a, b) => b.length - a.length);
}

/** The text with every form of every value replaced by `[secret NAME]` (longest first, so no partial form is left). */
export function maskSetupSecrets(text: string, secrets: readonly SetupSecret[]): string {
  let masked = text;
  for (const secret of secrets) for (const form of secretForms(secret.value)) masked = masked.split(form).join(`[secret ${secret.name}]`);
  return masked;
}

/** The build script's stdin: one `NAME base64(value)` line each. */
export function setupSecretsInput(secrets: readonly SetupSecret[]): Buffer {
  return Buffer.from(secrets.map((secret) => `${secret.name} ${Buffer.from(secret.value, 'utf8').toString('base64')}\n`).join(''));
}

/** First in the build script: the values into an unexported variable, and no stdin for the install. */
export const READ_SETUP_SECRETS = 'dockhand_setup_secrets=$(cat); exec </dev/null';

/** Just before setup.sh: the files on the tmpfs, the variable gone, `NAME_FILE` exported for setup.sh. */
export function writeSetupSecretsScript(names: readonly string[]): string {
  return [
    `( umask 077; printf '%s\\n' "$dockhand_setup_secrets" | while read -r name value; do [ -n "$name" ] && printf '%s' "$value" | base64 -d > "${SETUP_SECRETS_DIR}/$name"; done )`,
    'unset dockhand_setup_secrets',
    ...names.map((name) => `export ${name}_FILE=${SETUP_SECRETS_DIR}/${name}`),
  ].join('\n');
}

/** Regular files only (a link to the tmpfs is not the value in the image), as a NUL-separated list in the build's /tmp. */
const LIST_FILES = `set -eu; umask 077; while IFS= read -r -d '' f; do [ -L "$f" ] || [ ! -f "$f" ] || printf '%s\\0' "$f"; done > /tmp/dockhand-secret-scan`;
const SEARCH_FILES = `set -u; umask 077; p=$(mktemp); cat > "$p"; xargs -0 -r -a /tmp/dockhand-secret-scan grep -lsF -d skip -f "$p" --; rm -f "$p"`;

export interface SecretFound {
  secret: string;
  path: string;
}

/**
 * The files `docker diff` shows added or changed in the build container's layer (what `docker
 * commit` keeps) that contain a form of a secret, searched inside the container by the build user.
 */
export async function findSetupSecrets(container: Docker.Container, builder: DockerSandbox, secrets: readonly SetupSecret[]): Promise<SecretFound[]> {
  const changes = ((await container.changes()) ?? []) as { Path: string; Kind: number }[];
  const paths = changes.filter((change) => change.Kind !== 2 && !/^\/(tmp|run\/dockhand-secrets)(\/|$)/.test(change.Path)).map((change) => change.Path);
  if (paths.length === 0) return [];
  const list = await builder.raw(['bash', '-c', LIST_FILES], { stdin: Buffer.from(paths.map((path) => `${path}\0`).join('')), timeoutMs: 300_000 });
  if (list.exitCode !== 0) throw new DockhandError('internal', `listing the snapshot's changed files to search for setup secrets failed (exit ${list.exitCode}): ${list.stderr.toString('utf8').trim().slice(0, 500)}`);
  const found: SecretFound[] = [];
  for (const secret of secrets) {
    const forms = secretForms(secret.value);
    if (forms.length === 0) continue;
    const search = await builder.raw(['bash', '-c', SEARCH_FILES], { stdin: Buffer.from(`${forms.join('\n')}\n`), timeoutMs: 300_000 });
    for (const path of search.stdout.toString('utf8').split('\n').filter(Boolean)) found.push({ secret: secret.name, path });
  }
  return found;
}
