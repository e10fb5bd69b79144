import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/**
 * A real smart-HTTP git remote for tests: Node's http server in front of `git http-backend`
 * (CGI), requiring HTTP Basic auth with one token, the way GitHub takes an installation token.
 * It lets the push tests prove that the token is actually sent (pushes fail without it) and
 * that it ends up nowhere on disk.
 */

export interface HttpGitServer {
  /** e.g. http://127.0.0.1:PORT/ ; repositories are `${baseUrl}${name}.git`. */
  baseUrl: string;
  /** Requests that carried the right credentials / that were refused. */
  stats: { authorized: number; refused: number };
  close(): Promise<void>;
}

const HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

function forward(request: IncomingMessage, response: ServerResponse, projectRoot: string): void {
  const url = new URL(request.url ?? '/', 'http://localhost');
  const child = spawn(HTTP_BACKEND, [], {
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      GIT_PROJECT_ROOT: projectRoot,
      GIT_HTTP_EXPORT_ALL: '1',
      REMOTE_USER: 'dockhand-test',
      REQUEST_METHOD: request.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: request.headers['content-type'] ?? '',
      ...(request.headers['content-length'] ? { CONTENT_LENGTH: request.headers['content-length'] } : {}),
      ...(request.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: request.headers['content-encoding'] } : {}),
      ...(request.headers['git-protocol'] ? { GIT_PROTOCOL: String(request.headers['git-protocol']) } : {}),
    },
  });
  request.pipe(child.stdin);
  let buffered = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) {
      response.write(chunk);
      return;
    }
    buffered = Buffer.concat([buffered, chunk]);
    const end = buffered.indexOf('\r\n\r\n');
    if (end < 0) return;
    headersDone = true;
    let status = 200;
    for (const line of buffered.subarray(0, end).toString().split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
      else response.setHeader(name, value);
    }
    response.statusCode = status;
    response.write(buffered.subarray(end + 4));
  });
  child.stderr.resume();
  child.on('close', () => response.end());
}

export async function startHttpGitServer(projectRoot: string, token: string, username = 'x-access-token'): Promise<HttpGitServer> {
  const expected = `Basic ${Buffer.from(`${username}:${token}`).toString('base64')}`;
  const stats = { authorized: 0, refused: 0 };
  const server = createServer((request, response) => {
    if (request.headers.authorization !== expected) {
      stats.refused += 1;
      response.writeHead(401, { 'WWW-Authenticate': 'Basic realm="dockhand-test"' });
      response.end('authentication required\n');
      return;
    }
    stats.authorized += 1;
    forward(request, response, projectRoot);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('test git server has no TCP address');
  return {
    baseUrl: `http://127.0.0.1:${address.port}/`,
    stats,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
