/**
 * The web build: index.html and its hashed assets under /assets/, plus the service worker as a
 * separate entry with the stable name /sw.js so it controls the whole origin.
 * The service's CSP allows no inline script or style, so the module-preload polyfill (an inline
 * script) is off and CSS is always emitted as files.
 */
import { defineConfig, type Plugin } from 'vite';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/**
 * Tells the service worker which files make up this build's app shell (src/sw.ts caches them at
 * install) and the SHA-256 of each: index.html, everything emitted but source maps and the worker
 * itself, and the static icons and manifest, with a version hashed from all their bytes. So sw.js
 * changes whenever the app does, the browser installs it as a new worker, and that one replaces
 * the old cache. The hashes are taken from the files as written (what the service will serve),
 * and live inside sw.js, which the browser fetches from the service and no page script can
 * change, so the worker can refuse a cached copy that a script of the page rewrote.
 */
function swShell(): Plugin {
  const PLACEHOLDER = '__SVC_SHELL__';
  return {
    name: 'svc-sw-shell',
    apply: 'build',
    enforce: 'post',
    generateBundle(_options, bundle) {
      const sw = bundle['sw.js'];
      if (!sw || sw.type !== 'chunk' || !sw.code.includes(PLACEHOLDER)) return this.error(`sw.js with ${PLACEHOLDER} is missing from the bundle`);
    },
    writeBundle(options, bundle) {
      const dir = options.dir ?? here('dist/app');
      const version = createHash('sha256');
      const sha256: Record<string, string> = {};
      const add = (path: string, bytes: Buffer) => {
        sha256[path] = createHash('sha256').update(bytes).digest('base64');
        version.update(path).update(bytes);
      };
      for (const name of Object.keys(bundle).sort()) {
        if (name === 'sw.js' || name.endsWith('.map')) continue;
        add(`/${name}`, readFileSync(join(dir, name)));
      }
      for (const name of readdirSync(here('static')).sort()) add(`/${name}`, readFileSync(here(`static/${name}`)));
      if (!sha256['/index.html']) return this.error('index.html is missing from the bundle');
      const shell = { version: version.digest('hex').slice(0, 16), sha256 };
      const swPath = join(dir, 'sw.js');
      writeFileSync(swPath, readFileSync(swPath, 'utf8').replace(PLACEHOLDER, JSON.stringify(shell)));
    },
  };
}

export default defineConfig({
  root: here('.'),
  // The Argon2id worker (src/app/kdf/) is a module worker, like the app.
  worker: { format: 'es' },
  publicDir: here('static'),
  base: '/',
  plugins: [swShell()],
  build: {
    outDir: here('dist/app'),
    emptyOutDir: true,
    target: 'es2022',
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    sourcemap: true,
    rolldownOptions: {
      input: { index: here('index.html'), sw: here('src/sw.ts') },
      output: {
        entryFileNames: (chunk) => (chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js'),
      },
    },
  },
});
