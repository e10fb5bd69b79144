import type Docker from 'dockerode';

/** Memory a container holds, as `docker stats` computes it (usage minus page cache), in MiB. */
export async function containerMemoryMiB(docker: Docker, id: string): Promise<number> {
  const stats = await docker.getContainer(id).stats({ stream: false });
  const usage = stats.memory_stats.usage ?? 0;
  const detail: Record<string, number | undefined> = stats.memory_stats.stats ?? {};
  const cache = detail.total_inactive_file ?? detail.inactive_file ?? detail.cache ?? 0;
  return (usage - cache) / (1024 * 1024);
}
