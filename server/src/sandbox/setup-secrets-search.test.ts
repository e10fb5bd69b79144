import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { base64Middle, searchForms } from './setup-secret-forms';
import { findInBytes, searchLayer, secretMatcher, type SearchShell } from './setup-secrets-search';
import { zipOf } from './setup-secrets.test-support';

/*
 * The layer search's own scripts (bash, find, grep, tar: the same GNU tools as the build
 * container's Debian) run here on a directory of files, one file per form a setup.sh might write.
 * The gVisor build runs the same scripts (setup-secrets.int.test.ts).
 */
const VALUE = 'npm_Xq7vR2kP9sLm4TzW8yHb3NcD6fGj1QeA';
const SECRETS = [{ name: 'NPM_TOKEN', value: VALUE }];
let root: string;

const localShell: SearchShell = {
  raw: (cmd, options) =>
    new Promise((resolve, reject) => {
      const child = spawn(cmd[0] ?? 'false', cmd.slice(1), { env: { ...process.env, TMPDIR: join(root, 'tmp') } });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ exitCode: code ?? 1, stdout: Buffer.concat(out), stderr: Buffer.concat(err) }));
      child.stdin.end(options?.stdin ?? Buffer.alloc(0));
    }),
};

const reverse = (text: string): string => [...text].reverse().join('');
const rot13 = (text: string): string => text.replace(/[A-Za-z]/g, (char) => String.fromCharCode(((char.charCodeAt(0) - (char <= 'Z' ? 65 : 97) + 13) % 26) + (char <= 'Z' ? 65 : 97)));
const b64 = (text: string): string => Buffer.from(text).toString('base64');

/** Each file setup.sh might write, and the encoding the failure should name. */
function forms(): Array<{ file: string; content: Buffer | string; encoding: RegExp }> {
  return [
    { file: 'raw.txt', content: `token=${VALUE}\n`, encoding: /^raw$/ },
    { file: 'b64', content: `${b64(VALUE)}\n`, encoding: /^base64/ },
    { file: 'b64url', content: Buffer.from(`>>${VALUE}??`).toString('base64url'), encoding: /^base64(url)? \(inside a longer text\)$/ },
    { file: 'url', content: `https://x/?t=${encodeURIComponent(VALUE)}%2F%2B%3D`, encoding: /^raw$|URL-encoded/ },
    { file: 'hex', content: Buffer.from(VALUE).toString('hex'), encoding: /^hex$/ },
    { file: 'HEX', content: Buffer.from(VALUE).toString('hex').toUpperCase(), encoding: /^hex \(upper case\)$/ },
    { file: 'reversed', content: reverse(VALUE), encoding: /^reversed$/ },
    { file: 'rot13', content: rot13(VALUE), encoding: /^rot13$/ },
    { file: 'reversed-hex', content: reverse(Buffer.from(VALUE).toString('hex')), encoding: /hex, then reversed|reversed, then hex/ },
    { file: 'split', content: `${VALUE.slice(0, 17)}\n${VALUE.slice(17)}\n`, encoding: /^raw, split across lines$/ },
    { file: 'joined.js', content: `const t = "${VALUE.slice(0, 10)}" +\n  "${VALUE.slice(10, 20)}" "${VALUE.slice(20)}";\n`, encoding: /^raw, split across lines$/ },
    { file: 'wrapped.b64', content: `${b64(VALUE.repeat(3)).replace(/.{20}/g, '$&\n')}\n`, encoding: /^base64.*split across lines$/ },
    { file: '.npmrc', content: `//registry.acme.example/:_auth=${b64(`deploy:${VALUE}`)}\n`, encoding: /^base64( \(inside a longer text\))?$/ },
    { file: 'config.json', content: JSON.stringify({ auths: { 'registry.acme.example': { auth: b64(`ci-bot:${VALUE}`) } } }), encoding: /^base64( \(inside a longer text\))?$/ },
    { file: 'token.gz', content: gzipSync(`${VALUE}\n`), encoding: /^raw, in a gzip$/ },
    { file: 'hex.gz', content: gzipSync(Buffer.from(VALUE).toString('hex')), encoding: /^hex, in a gzip$/ },
    { file: 'bundle.jar', content: zipOf([{ name: 'META-INF/x.properties', data: Buffer.from(`t=${VALUE}`) }]), encoding: /^raw, in a zip$/ },
    { file: 'object', content: deflateSync(`blob 40\0${VALUE}`), encoding: /^raw, in a zlib$/ },
  ];
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'dockhand-setup-secrets-search-'));
  mkdirSync(join(root, 'tmp'));
  mkdirSync(join(root, 'layer'));
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

function write(files: Array<{ file: string; content: Buffer | string }>): string[] {
  return files.map(({ file, content }) => {
    const path = join(root, 'layer', file);
    writeFileSync(path, content);
    return path;
  });
}

describe('setup secret forms', () => {
  it('the base64 middle of each alignment is in the base64 of any text that embeds the value', () => {
    for (const prefix of ['', 'a', 'ab', 'user:', 'x'.repeat(7)]) {
      const encoded = Buffer.from(`${prefix}${VALUE}!?`).toString('base64');
      expect([0, 1, 2].some((alignment) => encoded.includes(base64Middle(Buffer.from(VALUE), alignment, 'base64')))).toBe(true);
    }
    expect(base64Middle(Buffer.from(VALUE), 0, 'base64').length).toBeGreaterThanOrEqual(Math.floor((VALUE.length * 4) / 3) - 1);
  });

  it('makes no form of a value shorter than 6 bytes (it would match ordinary text)', () => {
    expect(searchForms('abcde')).toEqual([]);
  });

  it('finds each form in bytes and names it, and nothing in text without the value', () => {
    const matcher = secretMatcher(SECRETS);
    expect(findInBytes(Buffer.from(`x ${b64(`me:${VALUE}`)} y`), matcher)).toEqual({ secret: 'NPM_TOKEN', encoding: 'base64' });
    expect(findInBytes(Buffer.from(`x ${b64(`user:${VALUE}`)} y`), matcher)).toEqual({ secret: 'NPM_TOKEN', encoding: 'base64 (inside a longer text)' });
    expect(findInBytes(Buffer.from(`"${VALUE.slice(0, 5)}"\n+ '${VALUE.slice(5)}'`), matcher)?.encoding).toBe('raw, split across lines');
    const ordinary = Buffer.from(`${b64('npm_Xq7vR2kP9sLm4T-something-else')}\n${Buffer.from('another value entirely').toString('hex')}\nnpm_Xq7vR2kP9 sLm4TzW8yHb3NcD6fGj1Qe\n`);
    expect(findInBytes(ordinary, matcher)).toBeUndefined();
  });
});

describe('searchLayer (the build container\'s scripts, run here)', () => {
  it('names every file that holds the value in any form, with its encoding', async () => {
    const cases = forms();
    const paths = write(cases);
    write([{ file: 'clean.js', content: 'module.exports = 1;\n' }]);
    const search = await searchLayer(localShell, [...paths, join(root, 'layer', 'clean.js')], SECRETS);
    const named = new Map(search.found.map((hit) => [hit.path.replace(`${root}/layer/`, '').replace(/!.*$/, ''), hit.encoding]));
    // A zip's member is named inside it.
    expect(search.found.map((hit) => hit.path)).toContain(`${root}/layer/bundle.jar!META-INF/x.properties`);
    const missed = cases.filter((form) => !form.encoding.test(named.get(form.file) ?? 'not found')).map((form) => `${form.file}: ${named.get(form.file) ?? 'not found'}`);
    expect(missed).toEqual([]);
    expect(named.has('clean.js')).toBe(false);
    expect(search.found.every((hit) => hit.secret === 'NPM_TOKEN')).toBe(true);
    expect(JSON.stringify(search)).not.toContain(VALUE);
    expect(search.notes.at(-1)).toMatch(/^setup secrets: searched 19 files .* and 4 archive\(s\) for \d+ forms/);
  });

  it("finds a value with special characters URL-encoded by any encoder (Python's quote keeps '/')", async () => {
    const special = 'tok/en+with spaces&more=';
    const secrets = [{ name: 'API_KEY', value: special }];
    const files = write([
      { file: 'component', content: `a=${encodeURIComponent(special)}\n` },
      { file: 'quote', content: `a=tok/en%2Bwith%20spaces%26more%3D\n` },
      { file: 'form', content: `a=tok%2fen%2bwith+spaces%26more%3d\n` },
      { file: 'other', content: `a=tok/en%2Bwith%20spaces%26less%3D\n` },
    ]);
    const search = await searchLayer(localShell, files, secrets);
    expect(search.found.map((hit) => [hit.path.replace(`${root}/layer/`, ''), hit.encoding])).toEqual([
      ['component', 'URL-encoded'],
      ['quote', 'URL-encoded'],
      ['form', 'URL-encoded'],
    ]);
    expect(findInBytes(Buffer.from('x tok/en%2Bwith%20spaces%26more%3D'), secretMatcher(secrets))?.encoding).toBe('URL-encoded');
  });

  it('finds the value in a file name and a symlink target, and lists a file it cannot read', async () => {
    const [secretDir] = write([{ file: 'plain', content: 'nothing here\n' }]);
    const named = join(root, 'layer', `cache-${VALUE}`);
    writeFileSync(named, 'x');
    const link = join(root, 'layer', 'link');
    symlinkSync(`/run/${b64(VALUE)}`, link);
    const locked = join(root, 'layer', 'locked');
    writeFileSync(locked, 'x');
    chmodSync(locked, 0o000);
    const search = await searchLayer(localShell, [secretDir ?? '', named, link, locked], SECRETS);
    expect(search.found.map((hit) => [hit.path, hit.encoding])).toEqual([
      [named, "raw, in the file's name"],
      [link, "base64, in a symlink's target"],
    ]);
    // root reads anything: the unreadable case only shows for an ordinary user (as the build's is).
    if (process.getuid?.() !== 0) expect(search.unreadable).toEqual([locked]);
  });

  it('notes the files it searched less than fully', async () => {
    const search = await searchLayer(localShell, write([{ file: 'a', content: 'x' }]), SECRETS);
    expect(search.found).toEqual([]);
    expect(search.notes).toHaveLength(1);
  });
});
