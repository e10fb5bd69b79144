import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import ssh2 from 'ssh2';
import { loadConfig } from '../config';
import { DockhandError } from '../errors';
import { allowedSignersLine, loadSigningKey, SIGNING_KEY_FILE } from './signing-key';

const roots: string[] = [];
function root(): string {
  const dir = mkdtempSync(join(tmpdir(), 'h-sign-key-'));
  roots.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function failure(run: () => unknown): DockhandError {
  try {
    run();
  } catch (error) {
    if (error instanceof DockhandError) return error;
    throw error;
  }
  throw new Error('expected a DockhandError');
}

describe('loadSigningKey', () => {
  it('generates an OpenSSH Ed25519 key 0600 in the data dir on first start, and reuses it after', () => {
    const dataDir = join(root(), 'data');
    const first = loadSigningKey(dataDir);
    const path = join(dataDir, SIGNING_KEY_FILE);
    expect(first.privateKeyPath).toBe(path);
    expect(first.source).toBe('data-dir');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toContain('-----BEGIN OPENSSH PRIVATE KEY-----');
    expect(first.publicKeyOpenSsh).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]+=* dockhand-signing-key$/);

    // ssh-keygen (what git runs to sign) reads the file and agrees on the public key and fingerprint.
    expect(execFileSync('ssh-keygen', ['-y', '-f', path], { encoding: 'utf8' }).trim().split(' ').slice(0, 2)).toEqual(first.publicKeyOpenSsh.split(' ').slice(0, 2));
    expect(execFileSync('ssh-keygen', ['-l', '-f', path], { encoding: 'utf8' })).toContain(first.keyId);

    const second = loadSigningKey(dataDir);
    expect(second.keyId).toBe(first.keyId);
    expect(second.publicKeyOpenSsh).toBe(first.publicKeyOpenSsh);
  });

  it('signs raw Ed25519 and verifies only its own signatures of the same bytes', () => {
    const key = loadSigningKey(root());
    const other = loadSigningKey(root());
    const bytes = Buffer.from('the attestation payload');
    const signature = key.sign(bytes);
    expect(signature).toHaveLength(64);
    expect(key.verify(bytes, signature)).toBe(true);
    expect(key.verify(Buffer.from('the attestation payloae'), signature)).toBe(false);
    expect(other.verify(bytes, signature)).toBe(false);
    const flipped = Buffer.from(signature);
    flipped[10] = (flipped[10] ?? 0) ^ 1;
    expect(key.verify(bytes, flipped)).toBe(false);
  });

  it('takes DOCKHAND_SIGNING_KEY through the configuration', () => {
    const dir = root();
    const path = join(dir, 'ci-key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'ci@acme', '-f', path]);
    const config = loadConfig({ DOCKHAND_DATA_DIR: join(dir, 'data'), DOCKHAND_SIGNING_KEY: path });
    const key = loadSigningKey(config.dataDir, config);
    expect(key.source).toBe('setting');
    expect(key.privateKeyPath).toBe(path);
    expect(key.publicKeyOpenSsh).toBe(readFileSync(`${path}.pub`, 'utf8').trim());
    expect(allowedSignersLine(key, 'bot@dockhand.invalid')).toBe(`bot@dockhand.invalid namespaces="git" ${key.publicKeyOpenSsh}`);
  });

  it('names DOCKHAND_SIGNING_KEY and says what to do when its file cannot be used', () => {
    const dir = root();
    const missing = failure(() => loadSigningKey(dir, { signingKey: join(dir, 'nope') }));
    expect(missing.code).toBe('bad_request');
    expect(missing.field).toBe('DOCKHAND_SIGNING_KEY');
    expect(missing.message).toMatch(/^DOCKHAND_SIGNING_KEY \(.*nope\): no such file/);

    const open = join(dir, 'open');
    writeFileSync(open, ssh2.utils.generateKeyPairSync('ed25519').private, { mode: 0o644 });
    chmodSync(open, 0o644);
    const readable = failure(() => loadSigningKey(dir, { signingKey: open }));
    expect(readable.message).toMatch(/DOCKHAND_SIGNING_KEY .*readable by others \(mode 644\)/);
    expect(readable.hint).toBe(`chmod 600 ${open}`);

    const garbage = join(dir, 'garbage');
    writeFileSync(garbage, 'not a key\n', { mode: 0o600 });
    expect(failure(() => loadSigningKey(dir, { signingKey: garbage })).message).toMatch(/DOCKHAND_SIGNING_KEY .*is not an OpenSSH private key/);

    const rsa = join(dir, 'rsa');
    execFileSync('ssh-keygen', ['-q', '-t', 'rsa', '-b', '2048', '-N', '', '-f', rsa]);
    expect(failure(() => loadSigningKey(dir, { signingKey: rsa })).message).toMatch(/DOCKHAND_SIGNING_KEY .*is a ssh-rsa key; the server signs with Ed25519/);

    const locked = join(dir, 'locked');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'secret words', '-f', locked]);
    const encrypted = failure(() => loadSigningKey(dir, { signingKey: locked }));
    expect(encrypted.message).toMatch(/DOCKHAND_SIGNING_KEY .*encrypted with a passphrase/);
    expect(encrypted.hint).toMatch(/ssh-keygen -p/);

    const truncated = join(dir, 'truncated');
    const whole = ssh2.utils.generateKeyPairSync('ed25519').private;
    writeFileSync(truncated, `${whole.slice(0, 120)}\n-----END OPENSSH PRIVATE KEY-----\n`, { mode: 0o600 });
    expect(failure(() => loadSigningKey(dir, { signingKey: truncated })).field).toBe('DOCKHAND_SIGNING_KEY');
  });

  it('names the data dir\'s key when a generated key was damaged', () => {
    const dataDir = root();
    loadSigningKey(dataDir);
    writeFileSync(join(dataDir, SIGNING_KEY_FILE), 'damaged\n');
    const error = failure(() => loadSigningKey(dataDir));
    expect(error.message).toMatch(/the data dir's signing-key .*is not an OpenSSH private key/);
  });
});
