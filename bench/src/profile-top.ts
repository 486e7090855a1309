/**
 * Reads a V8 CPU profile (.cpuprofile, as written by `node --cpu-prof`) and lists where the time
 * went: the functions with the most self time, and the same time summed per source area
 * (our packages, each dependency, Node internals, GC). Also usable alone:
 *   node bench/dist/profile-top.js <file.cpuprofile> [N]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface TopEntry {
  name: string;
  where: string;
  selfMs: number;
  percent: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Time outside idle, the share the percentages are of. */
  busyMs: number;
  functions: TopEntry[];
  areas: TopEntry[];
}

/** Shortens a script URL to the part a reader recognises: node_modules/<pkg>/…, packages/…, node:… */
function shortUrl(url: string): string {
  if (url === '') return '';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const pk = url.indexOf('/packages/');
  if (pk >= 0) return url.slice(pk + 1);
  return url.replace(/^file:\/\//, '');
}

function areaOf(url: string, name: string): string {
  if (url === '') return name.startsWith('(') ? name : '(native)';
  const s = shortUrl(url);
  if (s.startsWith('node:')) return 'node internals';
  // packages/<name>/dist/src/<folder or file>: fine enough to tell the store from the routes.
  if (s.startsWith('packages/')) return s.split('/').slice(0, 5).join('/').replace(/\.js$/, '');
  const parts = s.split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

export function summarise(file: string, n = 25): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const self = new Map<number, number>();
  let totalUs = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    totalUs += dt;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dt);
  }
  const fns = new Map<string, TopEntry>();
  const areas = new Map<string, TopEntry>();
  let idleUs = 0;
  for (const [id, us] of self) {
    const cf = byId.get(id)!.callFrame;
    const name = cf.functionName || '(anonymous)';
    if (name === '(idle)') {
      idleUs += us;
      continue;
    }
    const where = cf.url ? `${shortUrl(cf.url)}:${cf.lineNumber + 1}` : '';
    const key = `${name} ${where}`;
    const e = fns.get(key) ?? { name, where, selfMs: 0, percent: 0 };
    e.selfMs += us / 1000;
    fns.set(key, e);
    const area = areaOf(cf.url, name);
    const a = areas.get(area) ?? { name: area, where: '', selfMs: 0, percent: 0 };
    a.selfMs += us / 1000;
    areas.set(area, a);
  }
  const busyMs = (totalUs - idleUs) / 1000;
  const top = (m: Map<string, TopEntry>) =>
    [...m.values()]
      .sort((a, b) => b.selfMs - a.selfMs)
      .slice(0, n)
      .map((e) => ({ ...e, selfMs: Math.round(e.selfMs), percent: Math.round((1000 * e.selfMs) / busyMs) / 10 }));
  return { file, totalMs: Math.round(totalUs / 1000), busyMs: Math.round(busyMs), functions: top(fns), areas: top(areas) };
}

export function formatSummary(s: ProfileSummary): string {
  // "Busy" is every sample not idle: CPU work and also time blocked in a synchronous call (an fsync, a socket write).
  const lines = [
    `Profile ${s.file}: ${s.busyMs} ms on the main thread (not idle) of ${s.totalMs} ms`,
    '',
    '| self ms | % of busy | function | where |',
    '|---:|---:|---|---|',
  ];
  for (const f of s.functions) lines.push(`| ${f.selfMs} | ${f.percent} | \`${f.name}\` | ${f.where} |`);
  lines.push('', '| self ms | % of busy | area |', '|---:|---:|---|');
  for (const a of s.areas) lines.push(`| ${a.selfMs} | ${a.percent} | ${a.name} |`);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: node bench/dist/profile-top.js <file.cpuprofile> [N]\n');
    process.exit(2);
  }
  process.stdout.write(formatSummary(summarise(file, Number(process.argv[3] ?? 25))) + '\n');
}
