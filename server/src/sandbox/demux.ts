/**
 * Splits Docker's multiplexed attach stream (8-byte header: stream type, 3 zero bytes, big-endian
 * length) into stdout and stderr chunks, across arbitrary TCP chunk boundaries. Binary-safe:
 * payloads are handed on as Buffers.
 */
export class DockerStreamDemuxer {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly onChunk: (chunk: Buffer, stream: 'stdout' | 'stderr') => void) {}

  push(data: Buffer): void {
    this.pending = this.pending.length === 0 ? data : Buffer.concat([this.pending, data]);
    while (this.pending.length >= 8) {
      const type = this.pending[0];
      const length = this.pending.readUInt32BE(4);
      if (this.pending.length < 8 + length) return;
      const payload = this.pending.subarray(8, 8 + length);
      this.pending = this.pending.subarray(8 + length);
      // 0 = stdin echo (never sent without a TTY), 1 = stdout, 2 = stderr.
      if (payload.length > 0) this.onChunk(payload, type === 2 ? 'stderr' : 'stdout');
    }
  }
}
