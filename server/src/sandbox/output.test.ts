import { describe, expect, it } from 'vitest';
import { DockerStreamDemuxer } from './demux';
import { CappedOutput } from './output';

describe('CappedOutput', () => {
  it('keeps everything under the cap', () => {
    const output = new CappedOutput(100);
    output.push(Buffer.from('hello '));
    output.push(Buffer.from('world'));
    expect(output.text()).toBe('hello world');
    expect(output.truncated).toBe(false);
  });

  it('keeps head and tail halves and says how much was cut', () => {
    const output = new CappedOutput(10);
    for (const chunk of ['abc', 'defgh', 'ijklmnop', 'qrstuvwxyz']) output.push(Buffer.from(chunk));
    expect(output.truncated).toBe(true);
    expect(output.droppedBytes).toBe(16);
    expect(output.text()).toBe('abcde\n[... 16 bytes of output cut ...]\nvwxyz');
  });
});

describe('DockerStreamDemuxer', () => {
  function frame(type: number, payload: string): Buffer {
    const header = Buffer.alloc(8);
    header[0] = type;
    header.writeUInt32BE(Buffer.byteLength(payload), 4);
    return Buffer.concat([header, Buffer.from(payload)]);
  }

  it('splits frames across arbitrary chunk boundaries', () => {
    const seen: string[] = [];
    const demuxer = new DockerStreamDemuxer((chunk, stream) => seen.push(`${stream}:${chunk.toString()}`));
    const bytes = Buffer.concat([frame(1, 'out-1'), frame(2, 'err-1'), frame(1, 'out-2')]);
    for (let index = 0; index < bytes.length; index += 3) demuxer.push(bytes.subarray(index, index + 3));
    expect(seen).toEqual(['stdout:out-1', 'stderr:err-1', 'stdout:out-2']);
  });

  it('passes binary payloads through unchanged', () => {
    const seen: Buffer[] = [];
    const demuxer = new DockerStreamDemuxer((chunk) => seen.push(chunk));
    const payload = Buffer.from([0, 255, 10, 13, 128]);
    const header = Buffer.alloc(8);
    header[0] = 1;
    header.writeUInt32BE(payload.length, 4);
    demuxer.push(Buffer.concat([header, payload]));
    expect(Buffer.compare(Buffer.concat(seen), payload)).toBe(0);
  });
});
