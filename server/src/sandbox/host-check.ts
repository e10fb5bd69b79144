import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { z } from 'zod';
import { DockhandError } from '../errors';

export type SandboxRuntime = 'runsc' | 'runc';

const DockerInfo = z.object({
  Runtimes: z.record(z.string(), z.unknown()).optional(),
  ServerVersion: z.string().optional(),
});

export interface HostCheck {
  runtime: SandboxRuntime;
  /** Whether `runsc-egress` (host networking inside an --internal network) is registered. */
  egressRuntime: boolean;
  dockerVersion: string;
}

/** Where dockerode connects: `DOCKER_HOST` when set (dockerode reads it too), else the default socket. */
function dockerEndpoint(dockerHost: string | undefined): string {
  return dockerHost ? `DOCKER_HOST=${dockerHost}` : '/var/run/docker.sock';
}

/**
 * Verifies the engine answers and gVisor is registered. Refuses plain runc unless the operator set
 * `DOCKHAND_UNSAFE_RUNC=1` (`unsafeRunc`): runc shares the host kernel with code the model wrote, so
 * that mode is for development on machines without gVisor and is logged as an error every start.
 */
export async function checkSandboxHost(
  docker: Docker,
  options: { unsafeRunc?: boolean; logger?: Logger; dockerHost?: string | undefined } = {},
): Promise<HostCheck> {
  // dockerode connects to DOCKER_HOST when it is set, so the hint must name it too.
  const dockerHost = options.dockerHost ?? (process.env['DOCKER_HOST'] || undefined);
  let raw: unknown;
  try {
    raw = await docker.info();
  } catch (error) {
    throw new DockhandError('sandbox_unavailable', `the Docker engine does not answer at ${dockerEndpoint(dockerHost)}`, {
      cause: error,
      hint: dockerHost
        ? `check that the engine at DOCKER_HOST=${dockerHost} is running and reachable from this server`
        : 'start it (scripts/setup-host.sh) and check that this user may use /var/run/docker.sock (or set DOCKER_HOST)',
    });
  }
  const info = DockerInfo.parse(raw);
  const runtimes = Object.keys(info.Runtimes ?? {});
  const dockerVersion = info.ServerVersion ?? 'unknown';
  if (runtimes.includes('runsc')) {
    return { runtime: 'runsc', egressRuntime: runtimes.includes('runsc-egress'), dockerVersion };
  }
  if (options.unsafeRunc) {
    options.logger?.error(
      { runtimes },
      'UNSAFE: gVisor (runsc) is not registered and DOCKHAND_UNSAFE_RUNC=1 is set; sandboxes run on plain runc and share the host kernel. Never use this in production.',
    );
    return { runtime: 'runc', egressRuntime: false, dockerVersion };
  }
  throw new DockhandError('sandbox_unavailable', `gVisor runtime "runsc" is not registered with Docker (found: ${runtimes.join(', ') || 'none'})`, {
    hint: 'run scripts/setup-host.sh, or set DOCKHAND_UNSAFE_RUNC=1 for development only',
  });
}
