// Writes the build's short revision and commit time next to the compiled server, for GET /api/config.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';

let info = { revision: 'dev', commitTime: null };
try {
  const revision = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
    .toString()
    .trim();
  const seconds = Number(
    execFileSync('git', ['log', '-1', '--format=%ct'], { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim(),
  );
  info = { revision, commitTime: Number.isFinite(seconds) ? seconds * 1000 : null };
} catch {
  // not a git checkout: the build reports "dev"
}
mkdirSync('packages/server/dist', { recursive: true });
writeFileSync('packages/server/dist/build-info.json', JSON.stringify(info) + '\n');
