import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { buildCli, serveOverrides } from './cli/main';
import { loadConfig } from './config';
import { memoryCapacity } from './runner/fleet';
import { DockhandError } from './errors';
import { createLogger } from './log';

describe('loadConfig', () => {
  it('has defaults and reads DOCKHAND_* variables into a typed object', () => {
    const defaults = loadConfig({});
    expect(defaults.port).toBe(8737);
    expect(defaults.dataDir).toMatch(/\.dockhand-data$/);
    const config = loadConfig({ DOCKHAND_PORT: '9000', DOCKHAND_CONCURRENCY: '4', DOCKHAND_UNSAFE_RUNC: '0', DOCKHAND_FORGE: 'github' });
    expect(config).toMatchObject({ port: 9000, scheduler: { concurrency: 4 }, sandbox: { unsafeRunc: false }, forge: { kind: 'github' } });
  });

  it('uses ANTHROPIC_API_KEY even when the model is chosen by DOCKHAND_MODEL, unless a replay session is set', () => {
    const withKey = loadConfig({ ANTHROPIC_API_KEY: 'sk-ant-test', DOCKHAND_MODEL: 'claude-opus-4-1' });
    expect(withKey.model).toMatchObject({ apiKey: 'sk-ant-test', name: 'claude-opus-4-1' });
    expect(loadConfig({}).model.name).toBe('claude-sonnet-4-6');
    const replay = loadConfig({ ANTHROPIC_API_KEY: 'sk-ant-test', DOCKHAND_REPLAY_SESSION: 'demo' });
    expect(replay.model.apiKey).toBeUndefined();
  });

  it('names the bad variable', () => {
    let error: unknown;
    try {
      loadConfig({ DOCKHAND_PORT: 'eighty' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DockhandError);
    expect(error instanceof DockhandError && error.field).toBe('DOCKHAND_PORT');
    expect(() => loadConfig({ DOCKHAND_FORGE: 'gitlab' })).toThrow(/DOCKHAND_FORGE/);
  });

  it('chooses Postgres only when DOCKHAND_DATABASE_URL names one; SQLite stays the default', () => {
    expect(loadConfig({}).databaseUrl).toBeUndefined();
    expect(loadConfig({ DOCKHAND_DATABASE_URL: 'postgres://dockhand@db:5432/dockhand' }).databaseUrl).toBe('postgres://dockhand@db:5432/dockhand');
    expect(() => loadConfig({ DOCKHAND_DATABASE_URL: 'mysql://db/dockhand' })).toThrow(/DOCKHAND_DATABASE_URL: must be a postgres:\/\//);
  });

  it('runs every role in one process by default; api and worker alone need the shared Postgres store', () => {
    expect(loadConfig({}).role).toBe('all');
    expect(loadConfig({ DOCKHAND_ROLE: 'worker', DOCKHAND_DATABASE_URL: 'postgres://db/dockhand' }).role).toBe('worker');
    expect(loadConfig({ DOCKHAND_DATABASE_URL: 'postgres://db/dockhand' }, { role: 'api' }).role).toBe('api');
    expect(() => loadConfig({ DOCKHAND_ROLE: 'api' })).toThrow(/role api needs DOCKHAND_DATABASE_URL/);
    expect(() => loadConfig({ DOCKHAND_ROLE: 'scheduler' })).toThrow(/DOCKHAND_ROLE/);
  });

  it('the fleet rate budget: DOCKHAND_MODEL_BUDGET_TPM/RPM or serve flags, Postgres only, positive whole numbers', async () => {
    const db = { DOCKHAND_DATABASE_URL: 'postgres://db/dockhand' };
    expect(loadConfig(db).modelBudget).toEqual({});
    expect(loadConfig({ ...db, DOCKHAND_MODEL_BUDGET_TPM: '2000000', DOCKHAND_MODEL_BUDGET_RPM: '900' }).modelBudget).toEqual({ inputTokensPerMinute: 2_000_000, requestsPerMinute: 900 });
    expect(loadConfig({ ...db, DOCKHAND_MODEL_BUDGET_TPM: '5' }, serveOverrides({ modelTpm: 7 })).modelBudget).toEqual({ inputTokensPerMinute: 7 });
    expect(() => loadConfig({ ...db, DOCKHAND_MODEL_BUDGET_RPM: '0' })).toThrow(/configuration DOCKHAND_MODEL_BUDGET_RPM/);
    expect(() => loadConfig({ DOCKHAND_MODEL_BUDGET_TPM: '1000' })).toThrow(/DOCKHAND_MODEL_BUDGET_TPM: the fleet rate budget is kept in the shared Postgres store, and DOCKHAND_DATABASE_URL is not set/);
    const cli = buildCli().exitOverride();
    cli.commands.find((command) => command.name() === 'serve')?.exitOverride().configureOutput({ writeErr: () => undefined });
    await expect(cli.parseAsync(['node', 'dockhand', 'serve', '--model-tpm', '1.5'])).rejects.toThrow(/--model-tpm: must be a whole number of at least 1, got "1.5"/);
  });

  it('serve --port/--host/--data-dir win over DOCKHAND_PORT/HOST/DATA_DIR; a port out of range names --port', async () => {
    const env = { DOCKHAND_PORT: '9000', DOCKHAND_HOST: '0.0.0.0', DOCKHAND_DATA_DIR: '/srv/a' };
    expect(loadConfig(env)).toMatchObject({ port: 9000, host: '0.0.0.0', dataDir: '/srv/a' });
    expect(loadConfig(env, serveOverrides({ port: 8701, host: '127.0.0.1', dataDir: '/srv/b' }))).toMatchObject({ port: 8701, host: '127.0.0.1', dataDir: '/srv/b' });
    expect(loadConfig({}, serveOverrides({ port: 0 })).port).toBe(0);
    const cli = buildCli().exitOverride();
    cli.commands.find((command) => command.name() === 'serve')?.exitOverride().configureOutput({ writeErr: () => undefined });
    await expect(cli.parseAsync(['node', 'dockhand', 'serve', '--port', '70000'])).rejects.toThrow(/--port: must be a whole number from 0 to 65535, got "70000"/);
  });

  it('cost routing: DOCKHAND_MODEL_ROUTINE or serve --model-routine names the routine tasks\' model, which must have prices', () => {
    expect(loadConfig({}).model.routine).toBeUndefined();
    expect(loadConfig({ DOCKHAND_MODEL_ROUTINE: 'claude-haiku-4-5' }).model.routine).toBe('claude-haiku-4-5');
    expect(loadConfig({ DOCKHAND_MODEL_ROUTINE: 'claude-haiku-4-5' }, serveOverrides({ modelRoutine: 'claude-haiku-5-5-20261101' })).model.routine).toBe('claude-haiku-5-5-20261101');
    expect(() => loadConfig({ DOCKHAND_MODEL_ROUTINE: 'claude-haiku-4.5' })).toThrow(/configuration DOCKHAND_MODEL_ROUTINE: model "claude-haiku-4.5" has no prices in model\/pricing.ts \(known: claude-sonnet-5-5, /);
    expect(() => loadConfig({}, serveOverrides({ modelRoutine: 'gpt-4o' }))).toThrow(/configuration model.routine: model "gpt-4o" has no prices/);
  });

  it('capacity-based claims: DOCKHAND_TASK_MEMORY_MIB makes room = available memory less 1 GiB, over a task\'s share', () => {
    expect(loadConfig({}).scheduler.taskMemoryMiB).toBeUndefined();
    expect(loadConfig({ DOCKHAND_TASK_MEMORY_MIB: '300' }).scheduler.taskMemoryMiB).toBe(300);
    expect(() => loadConfig({ DOCKHAND_TASK_MEMORY_MIB: '2' })).toThrow(/configuration DOCKHAND_TASK_MEMORY_MIB/);
    const MiB = 1_048_576;
    expect(memoryCapacity(300, () => 4024 * MiB)()).toBe(10);
    expect(memoryCapacity(300, () => 1300 * MiB)()).toBe(0);
    expect(memoryCapacity(300, () => 500 * MiB)()).toBe(0);
  });
});

describe('logger redaction', () => {
  it('never writes the push token, in messages or in fields', () => {
    const lines: string[] = [];
    const sink = new Writable({ write(chunk, _encoding, done) { lines.push(chunk.toString()); done(); } });
    const token = 'ghs_abcdefghijklmnopqrstuvwxyz0123456789';
    const logger = createLogger({ level: 'info', secrets: [token], destination: sink });
    logger.info({ pushToken: token, config: { forge: { pushToken: token }, databaseUrl: `postgres://dockhand:${token}@db/dockhand` }, req: { method: 'GET', url: `/v1/x?token=${token}` } }, `pushing with ${token}`);
    logger.child({ taskId: 't1' }).warn(`git said: remote: invalid credentials ${token}`);
    const text = lines.join('');
    expect(text).not.toContain(token);
    expect(text).toContain('[REDACTED]');
    expect(text).toContain('"taskId":"t1"');
  });
});
