/**
 * The web build: index.html and its hashed assets under /assets/, plus the service worker as a
 * separate entry with the stable name /sw.js so it controls the whole origin.
 * The service's CSP allows no inline script or style, so the module-preload polyfill (an inline
 * script) is off and CSS is always emitted as files.
 */
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  root: here('.'),
  // The Argon2id worker (src/app/kdf/) is a module worker, like the app.
  worker: { format: 'es' },
  publicDir: here('static'),
  base: '/',
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
