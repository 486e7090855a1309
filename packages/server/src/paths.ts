/** Where the compiled server finds its neighbours in the repository layout. */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url)); // packages/server/dist/src
export const serverDist = resolve(here, '..');
const webPackage = resolve(here, '../../../web');

/** The web build (packages/web/dist/app) when it exists, else the placeholder page shipped in the repository. */
export function defaultWebRoot(): string {
  const built = join(webPackage, 'dist', 'app');
  return existsSync(join(built, 'index.html')) ? built : join(webPackage, 'public');
}

export const buildInfoFile = join(serverDist, 'build-info.json');
