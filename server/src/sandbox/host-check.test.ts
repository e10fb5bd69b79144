import Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { checkSandboxHost } from './host-check';

describe('checkSandboxHost when the engine does not answer', () => {
  it('names the configured DOCKER_HOST, not the default socket', async () => {
    const docker = new Docker({ host: '127.0.0.1', port: 1, protocol: 'http' });
    const error = await checkSandboxHost(docker, { dockerHost: 'tcp://127.0.0.1:1' }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'sandbox_unavailable' });
    expect(String(error)).toContain('DOCKER_HOST=tcp://127.0.0.1:1');
    expect(error).toHaveProperty('hint', 'check that the engine at DOCKER_HOST=tcp://127.0.0.1:1 is running and reachable from this server');
  });

  it('names the default socket when DOCKER_HOST is not set', async () => {
    const docker = new Docker({ socketPath: '/nonexistent/docker.sock' });
    const saved = process.env['DOCKER_HOST'];
    delete process.env['DOCKER_HOST'];
    try {
      const error = await checkSandboxHost(docker).catch((caught: unknown) => caught);
      expect(String(error)).toContain('/var/run/docker.sock');
    } finally {
      if (saved !== undefined) process.env['DOCKER_HOST'] = saved;
    }
  });
});
