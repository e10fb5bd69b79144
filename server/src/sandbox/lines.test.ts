import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sliceLines, type LineRequest } from './lines';
import { openLocalChannel } from './local-channel';
import type { SandboxChannel } from './channel';

let root: string;
let channel: SandboxChannel;
let close: () => void;

const FILES: Record<string, string | Buffer> = {
  'plain.txt': 'one\ntwo\nthree\n',
  'no-final-newline.txt': 'one\ntwo',
  'empty.txt': '',
  'only-newline.txt': '\n',
  'crlf.txt': 'a\r\nb\r\n',
  'long-line.txt': `short\n${'x'.repeat(2500)}\nend\n`,
  'unicode.txt': 'café\nΑθήνα\n',
  'binary.bin': Buffer.from([1, 2, 0, 3]),
  'big.txt': 'y\n'.repeat(5000),
};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'dockhand-lines-'));
  for (const [name, content] of Object.entries(FILES)) writeFileSync(join(root, name), content);
  ({ channel, close } = await openLocalChannel(root));
});

afterAll(() => {
  close?.();
  rmSync(root, { recursive: true, force: true });
});

describe('readLines in the channel program', () => {
  const requests: LineRequest[] = [
    { start: 1, count: 400, maxLineChars: 1000, maxBytes: 4 * 1024 * 1024 },
    { start: 2, count: 1, maxLineChars: 1000, maxBytes: 4 * 1024 * 1024 },
    { start: 3, count: 400, maxLineChars: 10, maxBytes: 4 * 1024 * 1024 },
    { start: 1, count: 400, maxLineChars: 1000, maxBytes: 1000 },
  ];
  const cases = Object.keys(FILES).flatMap((name) => requests.map((request) => [name, request] as const));

  it.each(cases)('cuts %s %j exactly as sliceLines does', async (name, request) => {
    expect(await channel.readLines(name, request)).toEqual(sliceLines(readFileSync(join(root, name)), request));
  });

  it('sends only the slice: a 400-line window of a large file, lines cut to the cap', async () => {
    const slice = await channel.readLines('big.txt', { start: 4000, count: 400, maxLineChars: 1000, maxBytes: 1e9 });
    expect(slice).toMatchObject({ bytes: 10_000, binary: false, total: 5000 });
    expect(slice.lines).toHaveLength(400);
    const long = await channel.readLines('long-line.txt', { start: 2, count: 1, maxLineChars: 1000, maxBytes: 1e9 });
    expect(long.lines).toEqual([['x'.repeat(1000), 2500]]);
  });

  it('refuses directories, missing files and escapes', async () => {
    await expect(channel.readLines('.', requests[0] as LineRequest)).rejects.toThrow(/directory/);
    await expect(channel.readLines('missing.txt', requests[0] as LineRequest)).rejects.toThrow(/No such file/);
    await expect(channel.readLines('../etc/passwd', requests[0] as LineRequest)).rejects.toThrow(/escapes the workspace/);
  });
});
