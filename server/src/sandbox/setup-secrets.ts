import type Docker from 'dockerode';
import { DockhandError } from '../errors';
import type { DockerSandbox } from './docker-sandbox';
import type { RegistryCredentials } from './private-registries';
import { searchForms } from './setup-secret-forms';
import { searchLayer, type SetupSecretSearch } from './setup-secrets-search';

/**
 * Setup secrets: `.dockhand/environment.yml` `secrets: [NAME, …]` are given to `.dockhand/setup.sh`
 * only. The build script reads them from its stdin before anything runs (into a shell variable
 * that is never exported, so the install's processes do not inherit it), and just before
 * setup.sh writes each to `/run/dockhand-secrets/NAME` (a tmpfs owned by the build user: never in
 * `docker commit`'s layer) with `NAME_FILE` pointing at it. Their values are masked in the build
 * log, and after the step the committed layer's changed files are searched for every value in
 * every form `setup-secret-forms.ts` names (hex, base64 inside longer text, gzip and zip members,
 * reversed, rot13, split across lines, …: `setup-secrets-search.ts`): a hit fails the build
 * naming the file and the form, never the value.
 *
 * Not covered: a process the install leaves running as the same user could read the files while
 * setup.sh runs (or write a value after the search), and the transforms `setup-secret-forms.ts`
 * lists as not covered.
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

/** The forms of a value masked in the build log: raw (each line of a multi-line value), base64, base64url, URL-encoded and every form the layer is searched for. */
export function secretForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const searched = searchForms(value).map((form) => Buffer.from(form.text, 'latin1').toString('utf8'));
  const forms = [...value.split(/\r?\n/), bytes.toString('base64'), bytes.toString('base64').replace(/=+$/, ''), bytes.toString('base64url'), encodeURIComponent(value), ...searched];
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

/**
 * The build container's layer (what `docker commit` keeps: the paths `docker diff` shows added or
 * changed, /tmp and the secrets' tmpfs aside) searched for every form of every secret
 * (`setup-secrets-search.ts`), inside the container by the build user.
 */
export async function findSetupSecrets(container: Docker.Container, builder: DockerSandbox, secrets: readonly SetupSecret[]): Promise<SetupSecretSearch> {
  const changes = ((await container.changes()) ?? []) as { Path: string; Kind: number }[];
  const paths = changes.filter((change) => change.Kind !== 2 && !/^\/(tmp|run\/dockhand-secrets)(\/|$)/.test(change.Path)).map((change) => change.Path);
  return searchLayer(builder, paths, secrets);
}

/**
 * The build's failure when the search found a secret or could not read a file, naming each file
 * and the form found (never the value), with what to change in setup.sh; undefined when clean.
 */
export function describeSetupSecretSearch(search: SetupSecretSearch, logPath: string): { message: string; hint: string } | undefined {
  const list = (items: string[]): string => `${items.slice(0, 20).join(', ')}${items.length > 20 ? ` and ${items.length - 20} more (all in the log)` : ''}`;
  if (search.found.length > 0) {
    const named = search.found.map((hit) => `${hit.path} (${hit.secret}, ${hit.encoding})`);
    return {
      message: `a setup secret's value is in the snapshot after .dockhand/setup.sh: ${list(named)}`,
      hint: `make .dockhand/setup.sh read $<NAME>_FILE and hand the value to the command that needs it without writing it, in any encoding (base64, hex, gzip, split, …), into the workspace or the home directory; what must be written goes under /tmp (not kept in the snapshot); full log: ${logPath}`,
    };
  }
  if (search.unreadable.length > 0) {
    return {
      message: `the snapshot would keep files the build user cannot read, so they cannot be searched for setup secrets: ${list(search.unreadable)}`,
      hint: `leave what .dockhand/setup.sh and the install write readable by their owner (chmod u+r), or remove it; full log: ${logPath}`,
    };
  }
  return undefined;
}
