import { fileURLToPath } from 'node:url';
import type Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it, vi } from 'vitest';
import { AnthropicModelClient } from '../anthropic-client';
import { main } from './cli';

const example = fileURLToPath(new URL('./cassettes/fix-failing-test.yaml', import.meta.url));

describe('replay-server CLI', () => {
  it('serves the example cassette as the default session; the client plays it through to the end', async () => {
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    let printed = '';
    const server = await main(['--cassette', example, '--port', '0']).finally(() => {
      printed = stdout.mock.calls.map((call) => String(call[0])).join('');
      stdout.mockRestore();
    });
    try {
      const url = /on (http:\/\/\S+) /.exec(printed)?.[1];
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const retries: string[] = [];
      const client = new AnthropicModelClient({
        apiKey: 'sk-not-a-session',
        baseURL: url,
        model: 'claude-sonnet-4-6',
        sleep: async () => {},
        onRetry: (notice) => retries.push(notice.reason),
      });
      const play = async (secondRun: string): Promise<Anthropic.Message | undefined> => {
        const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Fix add() in src/math.js' }];
        const toolOutputs = ['Tests: 2 failed, 3 passed', 'edited src/math.js', secondRun];
        for (let turn = 0; turn < 4; turn++) {
          const { message } = await client.turn({ system: [], tools: [], messages });
          messages.push({ role: 'assistant', content: message.content });
          const toolUse = message.content.find((block) => block.type === 'tool_use');
          if (toolUse?.type !== 'tool_use') return message;
          messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: toolOutputs[turn] ?? '' }] });
        }
        return undefined;
      };
      const green = await play('Tests: 0 failed, 5 passed');
      expect(green?.content[0]).toMatchObject({ text: 'The tests pass now. add() subtracted instead of adding.' });
      expect(retries).toEqual(['529 overloaded_error']);
      const red = await play('Tests: 1 failed, 4 passed');
      expect(red?.content[0]).toMatchObject({ text: 'The tests still fail; I need help.' });
    } finally {
      await server.close();
    }
  });

  it('refuses to start without a cassette, naming the flag', async () => {
    await expect(main(['--port', '0'])).rejects.toThrow(/--cassette is required/);
  });
});
