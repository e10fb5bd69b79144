import WebSocket from 'ws';
import type { EventSocket } from './event-stream';

/** The `ws` package behind the `EventSocket` port (Node 20's extension host has no WebSocket). */
export function connectWebSocket(url: string, headers: Record<string, string>): EventSocket {
  const socket = new WebSocket(url, { headers, handshakeTimeout: 10_000 });
  return {
    onOpen: (listener) => socket.on('open', listener),
    onMessage: (listener) => socket.on('message', (data: WebSocket.RawData) => listener(data.toString())),
    onClose: (listener) => socket.on('close', (code: number, reason: Buffer) => listener(code, reason.toString())),
    onError: (listener) => socket.on('error', listener),
    send: (data) => socket.send(data),
    close: () => {
      if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
      else socket.close();
    },
  };
}
