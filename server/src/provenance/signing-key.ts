import { createHash, createPrivateKey, createPublicKey, sign as signBytes, verify as verifyBytes, type KeyObject } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
// ssh2 is CommonJS whose exports Node's ESM loader cannot name (`import { utils }` fails at run time outside vitest).
import ssh2 from 'ssh2';
import { DockhandError } from '../errors';

const sshUtils = ssh2.utils;

/*
 * The server's signing key: one Ed25519 key that signs every commit the server pushes (git's SSH
 * signing, `ssh-keygen -Y sign` run by git) and every attestation (raw Ed25519 through node:crypto).
 *
 * It comes from `DOCKHAND_SIGNING_KEY` (the path of an unencrypted OpenSSH private key file, 0600)
 * or is generated on first start as `<dataDir>/signing-key` (0600, OpenSSH format: the form
 * `git -c gpg.format=ssh -c user.signingkey=<path>` hands to ssh-keygen). The OpenSSH container is
 * read and written by `ssh2`'s key parser and generator (the key pair itself is node:crypto's), so
 * making a key needs no ssh-keygen; signing a commit does (git runs it: Debian's openssh-client).
 *
 * The key never leaves the server: no sandbox, build or snapshot mounts or copies the data dir's
 * file, and nothing prints the private half. A fleet (Postgres, several processes) must give every
 * process the same file through DOCKHAND_SIGNING_KEY, else each one signs with a key of its own.
 */

export const SIGNING_KEY_FILE = 'signing-key';
export const SIGNING_KEY_VARIABLE = 'DOCKHAND_SIGNING_KEY';
/** The key's comment in the public line (`ssh-ed25519 AAAA… dockhand-signing-key`). */
const COMMENT = 'dockhand-signing-key';

export interface SigningKey {
  /** The OpenSSH private key file (`user.signingkey` for git). */
  privateKeyPath: string;
  /** `ssh-ed25519 AAAA… comment`: what GitHub and GitLab take as a signing key, and allowed_signers' key. */
  publicKeyOpenSsh: string;
  /** The key's fingerprint as `ssh-keygen -l` prints it (`SHA256:…`, unpadded base64 of the public blob's sha256). */
  keyId: string;
  /** Where the key came from: the setting, or generated in (and reused from) the data dir. */
  source: 'setting' | 'data-dir';
  /** A raw Ed25519 signature (64 bytes) of `bytes`. */
  sign(bytes: Uint8Array): Buffer;
  /** Whether `signature` is this key's Ed25519 signature of `bytes`. */
  verify(bytes: Uint8Array, signature: Uint8Array): boolean;
}

/** The settings the loader reads (`Config` has this shape: `loadSigningKey(config.dataDir, config)`). */
export interface SigningKeySettings {
  /** `DOCKHAND_SIGNING_KEY`: path of an OpenSSH Ed25519 private key file. */
  signingKey?: string | undefined;
}

/**
 * The server's key: the file `settings.signingKey` names, else `<dataDir>/signing-key`, generated
 * 0600 when absent (two processes starting at once on one data dir agree on one key: the file is
 * linked into place only where none exists). Throws `bad_request` naming DOCKHAND_SIGNING_KEY (or
 * the data dir's file) when the file cannot be used, saying what to do.
 */
export function loadSigningKey(dataDir: string, settings: SigningKeySettings = {}): SigningKey {
  if (settings.signingKey !== undefined && settings.signingKey !== '') {
    return readKey(settings.signingKey, SIGNING_KEY_VARIABLE, 'setting');
  }
  const path = join(dataDir, SIGNING_KEY_FILE);
  if (!exists(path)) generateKey(dataDir, path);
  return readKey(path, `the data dir's ${SIGNING_KEY_FILE}`, 'data-dir');
}

/** The `allowed_signers` line git's `gpg.ssh.allowedSignersFile` takes for this key. */
export function allowedSignersLine(key: Pick<SigningKey, 'publicKeyOpenSsh'>, principal: string): string {
  return `${principal} namespaces="git" ${key.publicKeyOpenSsh}`;
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return false;
    throw error;
  }
}

function generateKey(dataDir: string, path: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const pair = sshUtils.generateKeyPairSync('ed25519', { comment: COMMENT });
  // Written whole under a private name, then linked into place: a reader never sees half a key,
  // and of two processes generating at once the first link wins and the other reads it.
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, pair.private, { mode: 0o600, flag: 'w' });
  chmodSync(temporary, 0o600);
  try {
    linkSync(temporary, path);
  } catch (error) {
    if (!isErrno(error, 'EEXIST')) throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
}

function readKey(path: string, where: string, source: SigningKey['source']): SigningKey {
  const fail = (why: string, hint: string, cause?: unknown): never => {
    throw new DockhandError('bad_request', `${where} (${path}): ${why}`, {
      field: source === 'setting' ? SIGNING_KEY_VARIABLE : 'dataDir',
      hint,
      ...(cause === undefined ? {} : { cause }),
    });
  };
  const makeOne = 'make one with `ssh-keygen -t ed25519 -N "" -f <path>`, or unset DOCKHAND_SIGNING_KEY to have the server generate its own in the data dir';
  let mode: number;
  let text: string;
  try {
    mode = statSync(path).mode;
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return fail(isErrno(error, 'ENOENT') ? 'no such file' : 'cannot be read', source === 'setting' ? `point DOCKHAND_SIGNING_KEY at a readable OpenSSH private key file; ${makeOne}` : 'the data dir must be the server user\'s (0700)', error);
  }
  // ssh-keygen refuses a private key others may read ("UNPROTECTED PRIVATE KEY FILE"): say so now, not at the first push.
  if ((mode & 0o077) !== 0) fail(`is readable by others (mode ${(mode & 0o777).toString(8)})`, `chmod 600 ${path}`);
  if (!text.includes('-----BEGIN OPENSSH PRIVATE KEY-----')) {
    fail('is not an OpenSSH private key ("-----BEGIN OPENSSH PRIVATE KEY-----")', makeOne);
  }
  const parsed = sshUtils.parseKey(text);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (key === undefined || key instanceof Error) {
    const why = key instanceof Error ? key.message : 'holds no key';
    return fail(/passphrase|encrypted/i.test(why) ? 'is encrypted with a passphrase, which the server cannot type' : `cannot be parsed: ${why}`, /passphrase|encrypted/i.test(why) ? `remove the passphrase (ssh-keygen -p -N "" -f ${path}) or ${makeOne}` : makeOne);
  }
  if (key.type !== 'ssh-ed25519') fail(`is a ${key.type} key; the server signs with Ed25519`, makeOne);
  if (!key.isPrivateKey()) fail('holds no private key', makeOne);
  let privateKey: KeyObject;
  let publicKey: KeyObject;
  try {
    privateKey = createPrivateKey(key.getPrivatePEM());
    publicKey = createPublicKey(key.getPublicPEM());
  } catch (error) {
    return fail('cannot be used as an Ed25519 key', makeOne, error);
  }
  const blob = key.getPublicSSH();
  const publicKeyOpenSsh = `ssh-ed25519 ${blob.toString('base64')} ${key.comment.replace(/\s+/g, ' ').trim() || COMMENT}`;
  const keyId = `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
  return {
    privateKeyPath: path,
    publicKeyOpenSsh,
    keyId,
    source,
    sign: (bytes) => signBytes(null, bytes, privateKey),
    verify: (bytes, signature) => signature.length === 64 && verifyBytes(null, bytes, publicKey, signature),
  };
}

function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && 'code' in error && error.code === code;
}
