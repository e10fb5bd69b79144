import { describe, expect, it, vi } from 'vitest';

vi.mock('vscode', () => import('./test/vscode-stub'));

import type { ApiClient } from './api-client';
import type { TokenStore } from './auth';
import { Connection } from './connection';
import { DockhandError } from './errors';
import { commands, logChannel } from './test/vscode-stub';

function connection(api: Partial<Record<'health' | 'me', () => Promise<unknown>>>, token: string | undefined) {
  const client = { baseUrl: 'http://127.0.0.1:8737', health: async () => ({ ok: true, service: 'dockhand', version: '0.1.0' }), me: async () => ({ name: 'dev', role: 'user' }), ...api };
  const tokens = { get: async () => token };
  return new Connection(() => client as unknown as ApiClient, tokens as unknown as TokenStore, logChannel());
}

const contextOf = (key: string) => commands.executed.filter((c) => c.command === 'setContext' && c.args[0] === key).at(-1)?.args[1];

describe('connection', () => {
  it('is "no server" when nothing answers at the URL, with the reason', async () => {
    const c = connection({ health: async () => Promise.reject(new DockhandError('network', 'Cannot reach the Dockhand server at http://127.0.0.1:8737 (connection refused)')) }, 'dh_x');
    expect(await c.check()).toMatchObject({ phase: 'no_server', detail: 'Cannot reach the Dockhand server at http://127.0.0.1:8737 (connection refused).' });
    expect(contextOf('dockhand.connection')).toBe('no_server');
    expect(contextOf('dockhand.signedIn')).toBe(false);
  });

  it('is "signed out" without a token and when the server refuses the stored one; "signed in" only when it accepts it', async () => {
    expect((await connection({}, undefined).check()).phase).toBe('signed_out');
    const refused = await connection({ me: async () => Promise.reject(new DockhandError('unauthenticated', 'unknown or revoked token')) }, 'dh_old').check();
    expect(refused).toMatchObject({ phase: 'signed_out', detail: 'The server at http://127.0.0.1:8737 did not accept the stored token (unknown or revoked).' });
    const expired = await connection({ me: async () => Promise.reject(new DockhandError('token_expired', 'token tok_1 expired on 2026-03-01T09:30:00.000Z')) }, 'dh_old').check();
    expect(expired).toMatchObject({ phase: 'signed_out', detail: expect.stringMatching(/^Your Dockhand token expired on 2026-03-01 09:30 UTC: create a new one with "dockhand token create/) });
    const ok = connection({}, 'dh_good');
    expect(await ok.check()).toEqual({ phase: 'signed_in', user: 'dev', version: '0.1.0', disconnected: false });
    expect(contextOf('dockhand.signedIn')).toBe(true);
    // The server goes away and comes back: disconnected is its own state, then cleared.
    ok.setReachable(false, 'fetch failed');
    expect(ok.state).toMatchObject({ phase: 'signed_in', disconnected: true });
    expect(contextOf('dockhand.disconnected')).toBe(true);
    ok.setReachable(true);
    expect(ok.state.disconnected).toBe(false);
    // A 401 on the stream signs the window out.
    ok.signedOut('The server did not accept your token.');
    expect(ok.state.phase).toBe('signed_out');
  });
});
