/**
 * The web build: index.html and its hashed assets under /assets/, plus the service worker as a
 * separate entry with the stable name /sw.js so it controls the whole origin.
 * The service's CSP allows no inline script or style, so the module-preload polyfill (an inline
 * script) is off and CSS is always emitted as files.
 */
import { defineConfig, type Plugin } from 'vite';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

/**
 * Tells the service worker which files make up this build's app shell (src/sw.ts caches them at
 * install): index.html, everything emitted but source maps and the worker itself, and the static
 * icons and manifest, with a version hashed from all their bytes. So sw.js changes whenever the
 * app does, the browser installs it as a new worker, and that one replaces the old cache.
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
      const hash = createHash('sha256');
      const files: string[] = [];
      for (const name of Object.keys(bundle).sort()) {
        const out = bundle[name]!;
        if (name === 'sw.js' || name.endsWith('.map')) continue;
        files.push(`/${name}`);
        hash.update(name).update(out.type === 'chunk' ? out.code : out.source);
      }
      for (const name of readdirSync(here('static')).sort()) {
        files.push(`/${name}`);
        hash.update(name).update(readFileSync(here(`static/${name}`)));
      }
      if (!files.includes('/index.html')) return this.error('index.html is missing from the bundle');
      const shell = { version: hash.digest('hex').slice(0, 16), files };
      sw.code = sw.code.replace(PLACEHOLDER, JSON.stringify(shell));
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
