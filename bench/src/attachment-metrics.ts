/** The service's own count of the bytes its store holds for attachments, read from its metrics listener. */
import { get } from 'node:http';

/** `svc_attachment_bytes` from GET /metrics on 127.0.0.1:`port` (the store's stats, read at each scrape). */
export function storedBytes(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get({ host: '127.0.0.1', port, path: '/metrics', agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const m = /^svc_attachment_bytes (\d+)$/m.exec(text);
        if (res.statusCode !== 200 || !m) return reject(new Error(`metrics: HTTP ${res.statusCode}, no svc_attachment_bytes`));
        resolve(Number(m[1]));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('metrics: timed out')));
  });
}
