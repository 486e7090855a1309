/**
 * The attachment benchmark's client: files of random ciphertext cut into the parts the service
 * takes, their JSON bodies built once before any timing (so both servers get the same strings and
 * the generator only writes them), and uploads and downloads over node:http keep-alive sockets.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { ATTACHMENT } from '@svc/protocol';
import { id16 } from './fixtures.js';
import { pool } from './http.js';

/** The GCM tag each sealed chunk carries: a chunk of plaintext is one part less its tag. */
const TAG_BYTES = 16;

/**
 * Padmé (from the PURBs paper): the length rounded up so that only its top few bits vary, at most
 * about 12 % more. Clients pad a file's plaintext to this length before sealing it, so the
 * service stores this many bytes plus a tag per part.
 */
export function padme(length: number): number {
  if (length < 2) return length;
  const e = Math.floor(Math.log2(length));
  const s = Math.floor(Math.log2(e)) + 1;
  const mask = 2 ** (e - s) - 1;
  return Math.ceil(length / (mask + 1)) * (mask + 1);
}

/** Ciphertext bytes of a file of `plainBytes`: padded, then sealed in chunks of one part each. */
export function sealedBytes(plainBytes: number): number {
  const padded = padme(plainBytes);
  return padded + Math.ceil(padded / (ATTACHMENT.partBytes - TAG_BYTES)) * TAG_BYTES;
}

export interface BenchFile {
  /** The file's size before padding and sealing, as its sender sees it. */
  plainBytes: number;
  ciphertext: Buffer;
  /** `{"data":"…"}` of each part, in order. */
  bodies: string[];
  /** The finish's body. */
  finish: string;
}

/** A file of `plainBytes` as its ciphertext would travel (random bytes stand in for it: the service checks only sizes and the hash). */
export function benchFile(plainBytes: number): BenchFile {
  const ciphertext = randomBytes(sealedBytes(plainBytes));
  const bodies: string[] = [];
  for (let at = 0; at < ciphertext.length; at += ATTACHMENT.partBytes)
    bodies.push(JSON.stringify({ data: ciphertext.subarray(at, at + ATTACHMENT.partBytes).toString('base64url') }));
  const sha256 = createHash('sha256').update(ciphertext).digest('base64url');
  return { plainBytes, ciphertext, bodies, finish: JSON.stringify({ parts: bodies.length, size: ciphertext.length, sha256 }) };
}

export interface Answer {
  status: number;
  body: string;
}

/** One account's connection to one server: the session cookie and Origin every request carries. */
export class AttachmentClient {
  private agent: Agent;
  private readonly origin: string;

  constructor(
    readonly port: number,
    private readonly cookie: string,
    sockets = 1,
  ) {
    this.origin = `http://127.0.0.1:${port}`;
    this.agent = new Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  }

  close(): void {
    this.agent.destroy();
  }

  /** A request with a JSON body (already a string) or none; the answer as text. */
  send(method: string, path: string, body?: string, device?: string): Promise<Answer> {
    const headers: Record<string, string | number> = { origin: this.origin, cookie: this.cookie };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    if (device !== undefined) headers['x-device'] = device;
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: this.port, method, path, headers, agent: this.agent, timeout: 60_000 }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.end(body);
    });
  }

  /** GET of an attachment: its bytes as the chunks that came (kept, not copied), or the error's text. */
  download(id: string): Promise<{ status: number; chunks: Buffer[]; bytes: number }> {
    const path = `/api/attachments/${id}`;
    return new Promise((resolve, reject) => {
      const headers = { origin: this.origin, cookie: this.cookie };
      const req = request({ host: '127.0.0.1', port: this.port, method: 'GET', path, headers, agent: this.agent, timeout: 60_000 }, (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          chunks.push(c);
          bytes += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, chunks, bytes }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error(`GET ${path}: timed out`)));
      req.end();
    });
  }

  /**
   * Uploads `file` under a fresh id as the SDK does (its first part alone, then `inFlight` parts
   * at a time), then finishes it; returns the id.
   */
  async upload(file: BenchFile, inFlight: number): Promise<string> {
    const id = id16();
    const put = async (body: string, n: number) => {
      const r = await this.send('PUT', `/api/attachments/${id}/parts/${n}`, body);
      if (r.status !== 204) throw new Error(`part ${n}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    };
    await put(file.bodies[0]!, 0);
    await pool(file.bodies.slice(1), inFlight, (body, i) => put(body, i + 1));
    const r = await this.send('POST', `/api/attachments/${id}/finish`, file.finish);
    if (r.status !== 201) throw new Error(`finish: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    return id;
  }

  async remove(id: string): Promise<void> {
    const r = await this.send('DELETE', `/api/attachments/${id}`);
    if (r.status !== 204) throw new Error(`delete: HTTP ${r.status} ${r.body.slice(0, 300)}`);
  }
}

/** Throws unless a download brought exactly the file's ciphertext. */
export function checkDownload(file: BenchFile, got: { status: number; chunks: Buffer[]; bytes: number }, who: string): void {
  if (got.status !== 200) throw new Error(`${who}: download answered HTTP ${got.status}`);
  if (got.bytes !== file.ciphertext.length || !Buffer.concat(got.chunks, got.bytes).equals(file.ciphertext))
    throw new Error(`${who}: the download is not the uploaded ciphertext (${got.bytes} bytes of ${file.ciphertext.length})`);
}
