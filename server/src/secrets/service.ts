import { DockhandError } from '../errors';
import { SecretCipher, SECRETS_KEY_VARIABLE, type SecretKeySource } from './cipher';
import { MAX_SECRET_BYTES, SecretName, type SecretRows, type SecretView } from './types';

/*
 * Secrets per registered repository: set, list (names and use, never values), remove, and resolve
 * for the server's own use (the registry front's upstream credentials). A value leaves this class
 * only through `resolve`, which records the use; nothing here logs or returns a value otherwise.
 */

export interface ResolvedSecrets {
  values: Map<string, string>;
  /** Names asked for that the repository has no secret for. */
  missing: string[];
}

export class RepositorySecrets {
  /** Lists of values to mask (`maskInto`): every value this process knows is pushed into each. */
  private readonly maskLists: string[][] = [];

  private constructor(private readonly rows: SecretRows, private readonly cipher: SecretCipher) {}

  /**
   * Keeps `list` holding every stored value (decrypted now) and each value set or resolved later
   * in this process: the event log's and results' masking list (`store/hub.ts` `knownSecrets`),
   * which masks each value in its raw, URL-encoded and base64 forms. A value removed stays listed
   * (masking a string that is no longer a secret costs nothing); a value another process of a
   * Postgres fleet sets is listed here when this process uses it or restarts.
   */
  async maskInto(list: string[]): Promise<void> {
    for (const row of await this.rows.listAll()) addOnce(list, this.cipher.decrypt(row.repo, row.name, row.ciphertext));
    this.maskLists.push(list);
  }

  private remember(value: string): void {
    for (const list of this.maskLists) addOnce(list, value);
  }

  /**
   * Checks the key against what is stored: a server whose key did not encrypt the stored values
   * (another DOCKHAND_SECRETS_KEY, a lost key file) does not start.
   */
  static async open(rows: SecretRows, source: SecretKeySource): Promise<RepositorySecrets> {
    const cipher = new SecretCipher(source);
    const current = cipher.keyId();
    const stored = await rows.keyIds();
    const foreign = stored.filter((entry) => entry.keyId !== current);
    if (foreign.length > 0) {
      const count = foreign.reduce((sum, entry) => sum + entry.count, 0);
      const problem = current === undefined
        ? `${count} stored repository secret(s) need a key, but neither ${SECRETS_KEY_VARIABLE} is set nor ${cipher.describeSource()} exists`
        : `${count} stored repository secret(s) were encrypted with another key than ${cipher.describeSource()} gives`;
      throw new DockhandError('bad_request', problem, {
        field: SECRETS_KEY_VARIABLE,
        hint: `start with the key they were set with (${SECRETS_KEY_VARIABLE}, or the data dir's secrets.key); a lost key cannot be recovered: remove the secrets (dockhand secret rm) and set them again`,
      });
    }
    return new RepositorySecrets(rows, cipher);
  }

  async set(repo: string, name: string, value: string, by: string): Promise<SecretView> {
    checkName(name);
    if (value.length === 0) throw new DockhandError('bad_request', `value: secret ${name} is empty`, { field: 'value', hint: 'give the value on stdin or with --from-file FILE' });
    if (Buffer.byteLength(value, 'utf8') > MAX_SECRET_BYTES) throw new DockhandError('bad_request', `value: secret ${name} is larger than ${MAX_SECRET_BYTES} bytes`, { field: 'value' });
    const { ciphertext, keyId } = await this.cipher.encrypt(repo, name, value);
    this.remember(value);
    const setAt = new Date().toISOString();
    await this.rows.put({ repo, name, ciphertext, keyId, setBy: by, setAt });
    return { name, setBy: by, setAt, lastUsedAt: null, lastUsedBy: null };
  }

  async list(repo: string): Promise<SecretView[]> {
    return (await this.rows.list(repo)).map((row) => ({ name: row.name, setBy: row.setBy, setAt: row.setAt, lastUsedAt: row.lastUsedAt, lastUsedBy: row.lastUsedBy }));
  }

  async remove(repo: string, name: string): Promise<boolean> {
    checkName(name);
    return this.rows.remove(repo, name);
  }

  /**
   * Every secret of a repository whose registration is removed: a repository registered later
   * under the same name (another source, other owners) must not inherit its registry tokens.
   */
  async removeRepository(repo: string): Promise<number> {
    return this.rows.removeRepo(repo);
  }

  /** Which of `names` the repository has (no value read). */
  async missing(repo: string, names: readonly string[]): Promise<string[]> {
    const present = new Set((await this.rows.list(repo)).map((row) => row.name));
    return [...new Set(names)].filter((name) => !present.has(name));
  }

  /** The values of `names` for the server's own use by `usedBy` (recorded as each secret's last use). */
  async resolve(repo: string, names: readonly string[], usedBy: string): Promise<ResolvedSecrets> {
    const values = new Map<string, string>();
    const missing: string[] = [];
    const at = new Date().toISOString();
    for (const name of new Set(names)) {
      const row = await this.rows.get(repo, name);
      if (!row) {
        missing.push(name);
        continue;
      }
      const value = this.cipher.decrypt(repo, name, row.ciphertext);
      this.remember(value);
      values.set(name, value);
      await this.rows.markUsed(repo, name, at, usedBy);
    }
    return { values, missing };
  }
}

function addOnce(list: string[], value: string): void {
  if (!list.includes(value)) list.push(value);
}

function checkName(name: string): void {
  const parsed = SecretName.safeParse(name);
  if (!parsed.success) throw new DockhandError('bad_request', `name: "${name}": ${parsed.error.issues[0]?.message ?? 'not a secret name'}`, { field: 'name' });
}

/** The command that sets a secret (messages name it). */
export function setSecretCommand(repo: string, name: string): string {
  return `dockhand secret set ${repo} ${name} --from-file <file>`;
}
