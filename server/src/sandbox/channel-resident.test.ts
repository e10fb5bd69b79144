import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxChannel } from './channel';
import { sliceLines } from './lines';
import { openLocalChannel } from './local-channel';
import type { ContentAnswer, ContentHit, ContentQuery } from './types';

/*
 * The resident search must give ripgrep's answer or decline. These tests run the channel program
 * on the host (openLocalChannel) beside the real ripgrep, on a tree with the awkward cases: ignore
 * files, hidden and binary files, CRLF, non-ASCII letters and digits, no final newline, empty lines.
 */

let root: string;
let channel: SandboxChannel;
let close: () => void;

function write(relative: string, content: string | Buffer): void {
  mkdirSync(dirname(join(root, relative)), { recursive: true });
  writeFileSync(join(root, relative), content);
}

const BUDGET = 64 * 1024 * 1024;

function query(pattern: string, more: Partial<ContentQuery> = {}): ContentQuery {
  return { pattern, path: '.', fixedStrings: false, caseInsensitive: false, context: 0, maxCount: 1000, limit: 100_000, ...more };
}

/** What the search tool's ripgrep command answers, hits in path then line order. */
function ripgrep(q: ContentQuery): ContentAnswer | { error: string } {
  const args = ['--json', '--no-require-git', '--hidden', '-g', '!.git', '--max-count', String(q.maxCount)];
  if (q.context > 0) args.push('-C', String(q.context));
  if (q.caseInsensitive) args.push('-i');
  if (q.fixedStrings) args.push('-F');
  if (q.glob) args.push('-g', q.glob);
  args.push('-e', q.pattern, '--', q.path);
  let stdout: string;
  try {
    stdout = execFileSync('rg', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const failed = error as { status?: number; stdout?: string; stderr?: string };
    if (failed.status !== 1) return { error: String(failed.stderr) };
    stdout = failed.stdout ?? '';
  }
  const hits: ContentHit[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const message = JSON.parse(line) as { type: string; data: { path: { text: string }; lines: { text: string }; line_number: number } };
    if (message.type !== 'match' && message.type !== 'context') continue;
    hits.push({
      path: message.data.path.text.replace(/^\.\//, ''),
      line: message.data.line_number,
      text: message.data.lines.text.replace(/\n$/, ''),
      isMatch: message.type === 'match',
    });
  }
  hits.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.line - b.line));
  return { matches: hits.filter((hit) => hit.isMatch).length, hits };
}

async function resident(q: ContentQuery): Promise<ContentAnswer | { declined: string }> {
  return channel.search(q, BUDGET);
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'dockhand-resident-'));
  write('.gitignore', 'build/\n*.log\n');
  write('src/lock.c', '#include <lock.h>\n\nstatic int spin_lock_count = 0;\nvoid take(void) {\n  spin_lock(&l); // take it\n  spin_lock_irqsave(&l, flags);\n}\n\nint  trailing_space;   \nFOO BAR BAZ\n');
  write('src/lock.h', '#ifndef LOCK_H\n#define LOCK_H\nvoid take(void);\nint spin_lock_count;\n#endif\n');
  write('src/deep/nested/util.c', 'int util(int a) { return a * 2; }\nint util2(int b) { return b + 2; } // util\n');
  write('src/unicode.txt', 'café au lait\nΑθήνα και Σπάρτη\nnumbers ٣٤ and 34\nstraße STRASSE\nword_éclair here\n');
  write('src/crlf.txt', 'first line\r\nsecond line\r\nthird\r\n');
  write('src/no-newline.txt', 'alpha\nbeta\ngamma');
  write('src/empty.txt', '');
  write('src/blank-lines.txt', '\n\nx\n\n');
  write('docs/readme.md', '# Locks\nUse spin_lock for short sections.\nfoo(bar) and foo.bar and foo|bar\n');
  write('.hidden/config.c', 'int hidden_spin_lock;\n');
  write('build/out.c', 'int spin_lock_built;\n');
  write('debug.log', 'spin_lock in a log\n');
  write('dist/bundle.min.js', `var a=1;${'function spin_lock(x){return x+1};'.repeat(200)}\nshort spin_lock line\n`);
  write('bin/blob.bin', Buffer.from([0x73, 0x70, 0x69, 0x6e, 0x00, 0x01, 0x73, 0x70, 0x69, 0x6e, 0x5f, 0x6c, 0x6f, 0x63, 0x6b]));
  ({ channel, close } = await openLocalChannel(root));
});

afterAll(() => {
  close?.();
  rmSync(root, { recursive: true, force: true });
});

const PARITY: Array<[string, Partial<ContentQuery>?]> = [
  ['spin_lock'],
  ['spin_lock', { path: 'src' }],
  ['spin_lock', { path: 'src/lock.c' }],
  ['spin_lock_irqsave\\('],
  ['\\bspin_lock\\b'],
  ['\\w+_count'],
  ['^#'],
  ['\\)$'],
  [';$'],
  ['\\s+$'],
  ['[A-Z]{3,}'],
  ['[^a-z ]+'],
  ['\\d+'],
  ['\\D+'],
  ['\\W'],
  ['a.c'],
  ['^$'],
  ['x*'],
  ['(foo|bar)\\('],
  ['(?:int|void) \\w+\\('],
  ['foo\\.bar'],
  ['foo\\|bar'],
  ['caf.'],
  ['ΣΠΆΡΤΗ', { caseInsensitive: true }],
  ['spin_LOCK', { caseInsensitive: true }],
  ['straße', { caseInsensitive: true }],
  ['line$'],
  ['e\\b'],
  ['\\bword'],
  ['foo(bar)', { fixedStrings: true }],
  ['a * 2', { fixedStrings: true }],
  ['spin_lock', { glob: '*.c' }],
  ['spin_lock', { glob: '!*.md' }],
  ['spin_lock', { glob: '*.{c,h}' }],
  ['spin_lock', { glob: '*.[ch]' }],
  ['spin_lock', { context: 2 }],
  ['util', { context: 1 }],
  ['i', { maxCount: 2 }],
  ['i', { maxCount: 2, context: 1 }],
  ['l', { maxCount: 1, context: 3 }],
  ['spin_lock', { path: 'docs' }],
  // The substring prefilter must not drop a match: quantified, optional and alternated parts.
  ['spin_lo?ck'],
  ['spin_l*ock'],
  ['sp(i|o)n_lock'],
  ['spin_lock|util'],
  ['foo\\.bar'],
  ['spi{1}n'],
  ['(?:spin)+_lock'],
  ['in ?t '],
  ['s.*_l.*k'],
  ['[a-z]{2,5}_lock'],
  // dist/bundle.min.js has a 9 KB line: literals are scanned in memory, repetitions by ripgrep.
  ['return x\\+1', { path: 'dist' }],
  ['spin_lock\\(\\w+\\)', {}],
  ['spin_lock\\(\\w+\\)', { context: 1, maxCount: 1 }],
];

describe('resident search', () => {
  it.each(PARITY)('answers %s %j exactly as ripgrep does (or declines)', async (pattern, more) => {
    const q = query(pattern, more);
    const expected = ripgrep(q);
    const actual = await resident(q);
    if ('declined' in actual) {
      // Only syntax outside the translation may be declined on this tree.
      expect.soft(actual.declined).toBe('');
      return;
    }
    expect(expected).not.toHaveProperty('error');
    expect(actual).toEqual(expected);
  });

  it('counts every match but returns lines only for the first `limit`', async () => {
    const all = await resident(query('i'));
    const few = await resident(query('i', { limit: 3 }));
    if ('declined' in all || 'declined' in few) throw new Error('declined');
    expect(few.matches).toBe(all.matches);
    expect(few.hits.filter((hit) => hit.isMatch)).toEqual(all.hits.filter((hit) => hit.isMatch).slice(0, 3));
  });

  it.each([
    ['(a+)+b', {}, 'repeats a group'],
    ['(foo|bar)*x', {}, 'repeats a group'],
    ['\\w*\\w*\\w*x', {}, 'three or more unbounded'],
    ['a.*b.+c{2,}', {}, 'three or more unbounded'],
    ['(?i)foo', {}, 'uses (?'],
    ['(?=x)', {}, 'uses (?'],
    ['[[:alpha:]]', {}, 'nested or POSIX'],
    ['\\x41', {}, 'uses \\x'],
    ['a\\nb', {}, 'uses \\n'],
    ['\\pL', {}, 'uses \\p'],
    ['spin_lock', { glob: 'src/*.c' }, 'directory part'],
    ['spin_lock', { path: 'build' }, 'no file of the in-memory set'],
    ['spin_lock', { path: 'debug.log' }, 'no file of the in-memory set'],
  ] as Array<[string, Partial<ContentQuery>, string]>)('declines %s %j, saying why', async (pattern, more, reason) => {
    const answer = await resident(query(pattern, more));
    expect(answer).toHaveProperty('declined');
    expect((answer as { declined: string }).declined).toContain(reason);
  });

  it('follows changes to the workspace: edits, new and removed files, ignore rules', async () => {
    const check = async (q: ContentQuery): Promise<void> => {
      const actual = await resident(q);
      expect(actual).toEqual(ripgrep(q));
    };
    await check(query('spin_lock'));
    write('src/lock.c', 'void give(void) { spin_unlock(&l); }\n');
    await check(query('spin_'));
    write('src/new/fresh.c', 'int spin_lock_fresh;\n');
    await check(query('spin_lock'));
    unlinkSync(join(root, 'src/lock.h'));
    await check(query('spin_lock'));
    write('.gitignore', '*.log\n');
    await check(query('spin_lock'));
    write('.gitignore', 'build/\n*.log\nsrc/new/\n');
    await check(query('spin_lock'));
    // Several kinds of change at once: an edit beside a new directory and a removal.
    write('src/lock.c', 'void give(void) { spin_lock(&l); }\n');
    write('src/other/more.c', 'int spin_lock_more;\n');
    unlinkSync(join(root, 'src/new/fresh.c'));
    await check(query('spin_lock'));
  });

  it('applies anchored patterns of the root ignore file in a subdirectory too (ripgrep 13 does not)', async () => {
    write('.gitignore', 'build/\n*.log\nsrc/deep/\n');
    const answer = await resident(query('util', { path: 'src' }));
    expect(answer).toEqual({ matches: 0, hits: [] });
    // ripgrep given the subdirectory forgets the anchored pattern; given the root it applies it.
    expect(ripgrep(query('util', { path: 'src' }))).toMatchObject({ matches: 2 });
    expect(ripgrep(query('util'))).toMatchObject({ matches: 0 });
    write('.gitignore', 'build/\n*.log\n');
  });

  it('slices read_file lines from the text it holds, and from the disk once the file changed', async () => {
    const request = { start: 1, count: 400, maxLineChars: 1000, maxBytes: 4 * 1024 * 1024 };
    const fromDisk = (relative: string) => sliceLines(readFileSync(join(root, relative)), request);
    await resident(query('spin_lock')); // the text is held
    expect(await channel.readLines('src/deep/nested/util.c', request)).toEqual(fromDisk('src/deep/nested/util.c'));
    // Written in place, replaced by a rename (as editors save), removed: the next read sees each.
    write('src/deep/nested/util.c', 'int util3(void);\n');
    expect(await channel.readLines('src/deep/nested/util.c', request)).toEqual(fromDisk('src/deep/nested/util.c'));
    write('src/deep/nested/util.c.tmp', 'int util4(void);\nint util5(void);\n');
    renameSync(join(root, 'src/deep/nested/util.c.tmp'), join(root, 'src/deep/nested/util.c'));
    expect(await channel.readLines('src/deep/nested/util.c', request)).toEqual(fromDisk('src/deep/nested/util.c'));
    await resident(query('spin_lock')); // held again after the listing
    unlinkSync(join(root, 'src/deep/nested/util.c'));
    await expect(channel.readLines('src/deep/nested/util.c', request)).rejects.toThrow(/No such file/);
    write('src/deep/nested/util.c', 'int util(int a) { return a * 2; }\nint util2(int b) { return b + 2; } // util\n');
  });

  it('declines when the workspace has more text than its budget', async () => {
    const small = await openLocalChannel(root);
    try {
      const answer = await small.channel.search(query('spin_lock'), 64);
      expect(answer).toEqual({ declined: expect.stringContaining('in-memory search budget') });
    } finally {
      small.close();
    }
  });
});

describe('resident ctags', () => {
  it('lists a file\'s definitions as ctags does', async () => {
    const expected = execFileSync('ctags', ['--output-format=json', '--fields=+nKS', '--sort=no', '-f', '-', 'src/deep/nested/util.c'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.startsWith('{"_type": "tag"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const answer = await channel.tags('src/deep/nested/util.c');
    if (typeof answer !== 'string') throw new Error(answer.declined);
    const tags = answer.split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(tags.map((tag) => [tag.name, tag.line, tag.kind])).toEqual(expected.map((tag) => [tag.name, tag.line, tag.kind]));
    expect(tags.map((tag) => tag.name)).toEqual(['util', 'util2']);
  });

  it('declines directories and missing files, and refuses paths outside the root', async () => {
    expect(await channel.tags('src')).toEqual({ declined: 'not a regular file' });
    expect(await channel.tags('src/missing.c')).toEqual({ declined: expect.stringContaining('cannot stat') });
    await expect(channel.tags('../etc/passwd')).rejects.toThrow(/escapes the workspace/);
  });
});
