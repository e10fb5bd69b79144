import { openLocalChannel } from '../local-channel';
import type { SandboxChannel } from '../channel';
import type { LineRequest, LineSlice } from '../lines';
import type { ContentAnswer, ContentQuery } from '../types';
import { HostSandbox } from './host-sandbox';

/**
 * A host directory behind the `Sandbox` contract with the channel program's resident tools:
 * commands on the host (HostSandbox), file reads, line slices, resident search and resident ctags
 * from the channel program run as a host process over the directory — what a gVisor sandbox
 * serves through its channel, on the host kernel. For tests of the tools' resident paths and for
 * bench:tools' host side. Isolates nothing. A declined search or ctags answer is returned as
 * undefined, as DockerSandbox does; `declined` keeps the reasons.
 */
export class ResidentHostSandbox extends HostSandbox {
  readonly declined: string[] = [];

  private constructor(
    root: string,
    private readonly channel: SandboxChannel,
    private readonly closeChannel: () => void,
    private readonly budgetBytes: number,
  ) {
    super(root, 'host-resident');
  }

  static async open(root: string, options: { budgetBytes?: number } = {}): Promise<ResidentHostSandbox> {
    const budgetBytes = options.budgetBytes ?? 256 * 1024 * 1024;
    const { channel, close } = await openLocalChannel(root, { heapMiB: Math.ceil((budgetBytes * 2) / 1048576) + 128 });
    return new ResidentHostSandbox(root, channel, close, budgetBytes);
  }

  override async readFile(path: string): Promise<Buffer> {
    return this.channel.readFile(path);
  }

  async readLines(path: string, request: LineRequest): Promise<LineSlice> {
    return this.channel.readLines(path, request);
  }

  async searchContent(query: ContentQuery): Promise<ContentAnswer | undefined> {
    const answer = await this.channel.search(query, this.budgetBytes);
    if ('declined' in answer) {
      this.declined.push(answer.declined);
      return undefined;
    }
    return answer;
  }

  async symbolsOf(path: string): Promise<string | undefined> {
    const answer = await this.channel.tags(path);
    if (typeof answer !== 'string') {
      this.declined.push(answer.declined);
      return undefined;
    }
    return answer;
  }

  override async destroy(): Promise<void> {
    this.closeChannel();
    await super.destroy();
  }
}
