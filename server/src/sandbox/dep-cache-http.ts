import type { IncomingMessage, ServerResponse } from 'node:http';

/** Headers of the upstream's answer that belong to its connection, not to the answer passed on. */
const RESPONSE_HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'proxy-authenticate', 'upgrade']);

/** The upstream's headers as the front passes them on. */
export function passedHeaders(upstream: IncomingMessage): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upstream.headers)) if (value !== undefined && !RESPONSE_HOP_HEADERS.has(name)) out[name] = value;
  return out;
}

/** The upstream's answer streamed to the build as it comes; resolves when it has all been read. */
export async function relay(upstream: IncomingMessage, response: ServerResponse, status: number, headers: Record<string, string | string[]>): Promise<void> {
  response.writeHead(status, headers);
  upstream.pipe(response);
  await new Promise<void>((resolve, reject) => {
    upstream.once('end', resolve);
    upstream.once('error', reject);
  });
}

/** The whole body (at most `limit` bytes, else an error: an upstream that announced no length and sent more). */
export function readBody(stream: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stream.destroy(new Error(`tarball larger than ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}
