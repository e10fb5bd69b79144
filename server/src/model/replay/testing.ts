import { afterAll, beforeAll } from 'vitest';
import type { CassetteInput } from './cassette';
import { startReplayServer, type ReplayServer } from './server';

export interface ReplayFixture {
  /** The running server (inside tests). */
  readonly server: ReplayServer;
  /** Loads a cassette under a fresh session name and returns the name. */
  session(cassette: CassetteInput): string;
}

/** One replay server for a test file: started before its tests, closed after them. */
export function useReplayServer(prefix: string): ReplayFixture {
  let running: ReplayServer | undefined;
  let sessions = 0;
  beforeAll(async () => {
    running = await startReplayServer();
  });
  afterAll(async () => {
    await running?.close();
  });
  return {
    get server(): ReplayServer {
      if (!running) throw new Error('the replay server runs only while the tests of this file do');
      return running;
    },
    session(cassette: CassetteInput): string {
      const name = `${prefix}-${++sessions}`;
      this.server.addCassette(name, cassette);
      return name;
    },
  };
}
