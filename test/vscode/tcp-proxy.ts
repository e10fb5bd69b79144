import { createServer, connect, type Server, type Socket } from 'node:net';

/** A TCP proxy whose connections can be cut, to test reconnection over real sockets. */
export interface CuttableProxy {
  url: string;
  /** Destroys every open connection (like a network drop); new connections still work. */
  cut(): void;
  connections(): number;
  close(): Promise<void>;
}

export async function startProxy(target: { host: string; port: number }): Promise<CuttableProxy> {
  const open = new Set<Socket>();
  let total = 0;
  const server: Server = createServer((client) => {
    total += 1;
    const upstream = connect(target.port, target.host);
    open.add(client);
    open.add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    cut: () => {
      for (const socket of open) socket.destroy();
      open.clear();
    },
    connections: () => total,
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
