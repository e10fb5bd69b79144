import WebSocket from 'ws';
import { REJECTED_CLOSE_BASE, type EventSocket } from './event-stream';

/** The `ws` package behind the `EventSocket` port (Node 20's extension host has no WebSocket). */
export function connectWebSocket(url: string, headers: Record<string, string>): EventSocket {
  const socket = new WebSocket(url, { headers, handshakeTimeout: 10_000 });
  // An HTTP answer instead of the upgrade (401 for a refused token) would otherwise surface as a
  // bare 1006; it is passed on as close code 4000 + status (see REJECTED_CLOSE_BASE).
  let rejected: number | undefined;
  socket.on('unexpected-response', (request, response) => {
    rejected = response.statusCode;
    request.destroy();
    socket.terminate();
  });
  return {
    onOpen: (listener) => socket.on('open', listener),
    onMessage: (listener) => socket.on('message', (data: WebSocket.RawData) => listener(data.toString())),
    onClose: (listener) =>
      socket.on('close', (code: number, reason: Buffer) => (rejected ? listener(REJECTED_CLOSE_BASE + rejected, `the server answered ${rejected}`) : listener(code, reason.toString()))),
    onError: (listener) => socket.on('error', listener),
    send: (data) => socket.send(data),
    close: () => {
      if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
      else socket.close();
    },
  };
}
