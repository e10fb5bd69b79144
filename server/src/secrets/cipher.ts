import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { DockhandError } from '../errors';

/*
 * The key that encrypts repository secrets at rest: AES-256-GCM (node:crypto), a fresh 12-byte IV
 * per value, the repository and the secret's name as additional data (a stored value cannot be
 * moved to another repository or name and still decrypt). The key comes from DOCKHAND_SECRETS_KEY
 * (32 bytes, hex or base64) or from `<dataDir>/secrets.key` (0600, made when the first secret is
 * set). Each stored value carries the key's id (an HMAC of a fixed text under the key, never the
 * key), so a server started with another key, or with none where secrets exist, stops at start-up
 * naming the variable and the file instead of answering "no such secret" later.
 *
 * It will not rotate keys (set every secret again after a change of key) nor keep the key anywhere
 * but the environment or the data dir (a fleet on Postgres sets DOCKHAND_SECRETS_KEY on every
 * process: the nodes' data dirs hold different files).
 */

export const SECRETS_KEY_VARIABLE = 'DOCKHAND_SECRETS_KEY';
export const SECRETS_KEY_FILE = 'secrets.key';
const FORMAT = 'v1';

/** Where the key comes from: the variable's value, or the key file in the data dir. */
export interface SecretKeySource {
  /** DOCKHAND_SECRETS_KEY's value, when set. */
  variable?: string;
  dataDir: string;
}

function parseKey(text: string, where: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : /^[A-Za-z0-9+/]{43}=?$/.test(trimmed) ? Buffer.from(trimmed, 'base64') : undefined;
  if (!key || key.length !== 32) {
    throw new DockhandError('bad_request', `${where}: the secrets key must be 32 bytes written as 64 hex digits or base64`, {
      field: where,
      hint: 'make one with: openssl rand -hex 32',
    });
  }
  return key;
}

export class SecretCipher {
  private key: Buffer | undefined;
  private readonly keyPath: string;

  constructor(private readonly source: SecretKeySource) {
    this.keyPath = join(source.dataDir, SECRETS_KEY_FILE);
    if (source.variable !== undefined) this.key = parseKey(source.variable, SECRETS_KEY_VARIABLE);
    else if (existsSync(this.keyPath)) this.key = parseKey(readFileSync(this.keyPath, 'utf8'), this.keyPath);
  }

  /** Where the key is read from, for messages. */
  describeSource(): string {
    return this.source.variable !== undefined ? SECRETS_KEY_VARIABLE : this.keyPath;
  }

  /** The id of the key in use; undefined when there is none yet (no variable, no key file). */
  keyId(): string | undefined {
    return this.key ? idOf(this.key) : undefined;
  }

  /** The key, made and written 0600 into the data dir on first use when none is configured. */
  private async ensureKey(): Promise<Buffer> {
    if (this.key) return this.key;
    const key = randomBytes(32);
    // 'wx': a key file another process made meanwhile is never overwritten (it would orphan its secrets).
    try {
      writeFileSync(this.keyPath, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
      await chmod(this.keyPath, 0o600);
      this.key = key;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      this.key = parseKey(readFileSync(this.keyPath, 'utf8'), this.keyPath);
    }
    return this.key;
  }

  async encrypt(repo: string, name: string, value: string): Promise<{ ciphertext: string; keyId: string }> {
    const key = await this.ensureKey();
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(additionalData(repo, name));
    const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    const keyId = idOf(key);
    return { ciphertext: [FORMAT, keyId, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':'), keyId };
  }

  decrypt(repo: string, name: string, ciphertext: string): string {
    const [format, keyId, iv, tag, body] = ciphertext.split(':');
    if (format !== FORMAT || !keyId || !iv || !tag || body === undefined) throw new DockhandError('internal', `secret ${name} of ${repo}: stored value is not in a format this server reads`);
    if (!this.key || keyId !== idOf(this.key)) {
      throw new DockhandError('internal', `secret ${name} of ${repo} was encrypted with another key than ${this.describeSource()}`, { hint: `start the server with the key the secrets were set with, or set ${name} again: dockhand secret set ${repo} ${name}` });
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAAD(additionalData(repo, name));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    try {
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw new DockhandError('internal', `secret ${name} of ${repo}: stored value does not authenticate (changed in the database, or moved from another repository)`, { hint: `set it again: dockhand secret set ${repo} ${name}` });
    }
  }
}

function idOf(key: Buffer): string {
  return createHmac('sha256', key).update('dockhand secrets key id').digest('hex').slice(0, 16);
}

function additionalData(repo: string, name: string): Buffer {
  return Buffer.from(`${repo}\u0000${name}`, 'utf8');
}
