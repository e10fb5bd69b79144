import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { PostgresStore } from '../store/postgres';
import { openTestStore } from '../store/postgres.test-support';
import { TokenSockets } from './socket-tokens';

/*
 * Issue #23 item 3 on Postgres: a token revoked through another API replica (its own store
 * connection, same database) closes the sockets this replica holds, at the next check.
 */

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('TokenSockets on Postgres', () => {
  it('a revocation by another replica closes this replica\u2019s socket within its check interval', async () => {
    const replicaA = await openTestStore();
    cleanups.push(() => replicaA.dispose(), () => replicaA.store.close());
    const replicaB = await PostgresStore.open({ url: replicaA.url, schema: replicaA.schema });
    cleanups.push(() => replicaB.close());
    await replicaA.store.createUser('alice', 'user');
    const { token, info } = await replicaA.store.createToken('alice', 'socket');
    const watcher = new TokenSockets(replicaA.store, { checkMs: 200 });
    cleanups.push(() => watcher.stop());
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    cleanups.push(() => new Promise<void>((done) => server.close(() => done())));
    server.on('connection', (socket) => watcher.watch(socket, token, info));
    await new Promise<void>((done) => server.once('listening', () => done()));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const client = new WebSocket(`ws://127.0.0.1:${address.port}`);
    const closed = new Promise<{ code: number; reason: string; at: number }>((done) => client.on('close', (code, reason) => done({ code, reason: reason.toString(), at: Date.now() })));
    await new Promise<void>((done, reject) => {
      client.once('open', () => done());
      client.once('error', reject);
    });
    // Still open while the token holds.
    await new Promise((done) => setTimeout(done, 600));
    expect(client.readyState).toBe(WebSocket.OPEN);
    const revokedAt = Date.now();
    expect(await replicaB.revokeToken(info.id)).toBe(true);
    const result = await closed;
    expect(result).toMatchObject({ code: 4401, reason: 'token revoked' });
    expect(result.at - revokedAt).toBeLessThan(2_000);
  });
});
