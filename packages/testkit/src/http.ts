/**
 * The test clients' HTTP(S): a request read whole, or an event stream read as it arrives, on
 * node:http(s) with a keep-alive pool. Not `fetch`: in Node 20 a `fetch` costs its process about
 * 280 µs of CPU against about 30 µs here (a loop of small POSTs to a local server), and the API
 * suites make their hundreds of requests per file in the test process itself. What the suites
 * read of an answer is kept as `fetch` gave it: the status, a `Headers` (repeated headers joined
 * by ", ", as `fetch` joins them), and the body. The service compresses nothing and redirects
 * nowhere, which `fetch` would have undone or followed.
 */
import http from 'node:http';
import https from 'node:https';

/**
 * Connections are reused across the clients of a test process, as `fetch`'s global pool did. An
 * idle one is closed after 4 s, before a Node server's own 5 s keep-alive timeout (the two-instance
 * balancer's) can close it under a request just written to it; `fetch` kept the same margin by
 * reading the server's Keep-Alive hint, which Node 20's agent does not read.
 */
const agents = { http: new http.Agent({ keepAlive: true, timeout: 4_000 }), https: new https.Agent({ keepAlive: true, timeout: 4_000 }) };

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The body's bytes as they came (an attachment download is not text). */
  bytes: Buffer;
}

function answerHeaders(res: http.IncomingMessage): Headers {
  const answer = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) answer.append(raw[i]!, raw[i + 1]!);
  return answer;
}

function send(url: string, options: http.RequestOptions, onAnswer: (res: http.IncomingMessage) => void): http.ClientRequest {
  const secure = url.startsWith('https:');
  const agent = secure ? agents.https : agents.http;
  return secure ? https.request(url, { ...options, agent }, onAnswer) : http.request(url, { ...options, agent }, onAnswer);
}

export function httpRequest(url: string, method: string, headers: Record<string, string>, body?: string): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const sent = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = send(url, { method, headers: sent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: answerHeaders(res), text: bytes.toString('utf8'), bytes });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A GET whose body is read as it arrives (an event stream): the answer's head, its body, and how to stop reading. */
export interface HttpStream {
  status: number;
  headers: Headers;
  body: AsyncIterable<Uint8Array>;
  /** Closes the connection, as aborting a `fetch` did. */
  close(): void;
}

export function httpStream(url: string, headers: Record<string, string>): Promise<HttpStream> {
  return new Promise((resolve, reject) => {
    const req = send(url, { method: 'GET', headers }, (res) => {
      resolve({ status: res.statusCode ?? 0, headers: answerHeaders(res), body: res, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}
