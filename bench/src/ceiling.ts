/**
 * The ceiling: the least a server can do for the benchmark's workloads, with no framework and no
 * storage. It parses the JSON, writes the envelope to the open event streams of the targets, and
 * answers 202. Every throughput the service reaches is printed as a ratio to this one's, measured
 * side by side in the same run, so that the drift of a shared machine cancels out.
 *
 * The caller's nick is the value of the session cookie (there are no accounts), and the
 * benchmark tells it who owns which devices and who is in which room with POST /setup.
 * Attachments are kept in memory (ceiling-attachments.ts).
 * Run: PORT=<port> node bench/dist/ceiling.js
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { attachmentRoute } from './ceiling-attachments.js';

const devicesOf = new Map<string, string[]>();
const membersOf = new Map<string, string[]>();
const streams = new Map<string, ServerResponse>();

const STREAM_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' };
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

function nickOf(req: IncomingMessage): string {
  const m = /svc_session=([^;]+)/.exec(req.headers.cookie ?? '');
  return m?.[1] ?? '';
}

function answer(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status);
    res.end();
    return;
  }
  res.writeHead(status, JSON_HEADERS);
  res.end(JSON.stringify(body));
}

interface SendBody {
  id: string;
  to: { dm?: string; room?: string };
  keyId: string;
  iv: string;
  ct: string;
}

/** The same targets as the service: DM, the recipient's devices and the sender's other devices; room, every member's devices; never the sending device. */
function targetsOf(from: string, sendingDevice: string, b: SendBody): string[] {
  const nicks = b.to.dm !== undefined ? [b.to.dm, from] : (membersOf.get(b.to.room ?? '') ?? []);
  const out: string[] = [];
  for (const n of nicks) for (const d of devicesOf.get(n) ?? []) if (d !== sendingDevice) out.push(d);
  return out;
}

async function send(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const b = JSON.parse(await readBody(req)) as SendBody;
  const from = nickOf(req);
  const ts = Date.now();
  // Field order of the envelope as the interface fixes it: id, to, from, keyId, iv, ct, ts.
  const data = JSON.stringify({ id: b.id, to: b.to, from, keyId: b.keyId, iv: b.iv, ct: b.ct, ts });
  const frame = `event: msg\nid: ${b.id}\ndata: ${data}\n\n`;
  for (const d of targetsOf(from, String(req.headers['x-device'] ?? ''), b)) streams.get(d)?.write(frame);
  answer(res, 202, { id: b.id, ts });
}

function openStream(req: IncomingMessage, res: ServerResponse): void {
  const device = new URL(req.url ?? '/', 'http://x').searchParams.get('device') ?? '';
  res.writeHead(200, STREAM_HEADERS);
  res.write('event: ready\ndata: {}\n\n');
  streams.get(device)?.end();
  streams.set(device, res);
  res.once('close', () => {
    if (streams.get(device) === res) streams.delete(device);
  });
}

async function setup(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const b = JSON.parse(await readBody(req)) as { devices?: Record<string, string[]>; rooms?: Record<string, string[]> };
  for (const [nick, ids] of Object.entries(b.devices ?? {})) devicesOf.set(nick, ids);
  for (const [room, nicks] of Object.entries(b.rooms ?? {})) membersOf.set(room, nicks);
  answer(res, 204);
}

const server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  const route = `${req.method} ${path}`;
  const done = (p: Promise<void>) => p.catch(() => answer(res, 400, { error: 'bad_json', message: 'bad body' }));
  if (route === 'POST /api/messages') return void done(send(req, res));
  if (route === 'GET /api/events') return openStream(req, res);
  if (route === 'POST /api/ack') return void done(readBody(req).then(() => answer(res, 204)));
  if (route === 'POST /setup') return void done(setup(req, res));
  const attachment = attachmentRoute(req.method ?? '', path ?? '');
  if (attachment) return void done(readBody(req).then((body) => attachment(body, res)));
  if (route === 'GET /healthz') {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    return void res.end('ok');
  }
  answer(res, 404, { error: 'not_found', message: 'not found' });
});
server.keepAliveTimeout = 60_000;

const stop = () => {
  for (const s of streams.values()) s.end();
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
