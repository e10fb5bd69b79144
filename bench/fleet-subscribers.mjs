// Subscriber side of bench/fleet.ts, in its own thread so the clients' work does not share the
// server's event loop. Frames are parsed with JSON.parse only (the server's cost is what is measured).
import { parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';

const { url, protocols, count } = workerData;
const now = () => performance.timeOrigin + performance.now();
const lastSeq = new Array(count).fill(0);
const receipts = new Map(); // seq -> receive times (absolute ms)
let recording = false;
let reported = 0;
let live = 0;

function progress() {
  const min = Math.min(...lastSeq);
  if (min > reported) {
    reported = min;
    parentPort.postMessage({ kind: 'progress', seq: min });
  }
}

for (let i = 0; i < count; i++) {
  const ws = new WebSocket(url, protocols);
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString());
    if (frame.kind === 'live') {
      live += 1;
      if (live === count) parentPort.postMessage({ kind: 'ready', seq: Math.min(...lastSeq) });
      return;
    }
    if (frame.kind === 'resync') parentPort.postMessage({ kind: 'resync' });
    if (frame.kind !== 'event') return;
    lastSeq[i] = frame.event.seq;
    if (recording) {
      let list = receipts.get(frame.event.seq);
      if (!list) receipts.set(frame.event.seq, (list = []));
      list.push(now());
    }
    progress();
  });
  ws.on('error', (error) => parentPort.postMessage({ kind: 'error', message: String(error) }));
}

parentPort.on('message', (message) => {
  if (message === 'record') recording = true;
  if (message === 'stop-recording') {
    recording = false;
    parentPort.postMessage({ kind: 'receipts', receipts: [...receipts] });
    receipts.clear();
  }
  if (message === 'close') process.exit(0);
});
