/**
 * Import boundaries, checked by `npm run lint` (dependency-cruiser over the TypeScript sources,
 * type-only imports included): no module cycles, and no layer importing from one above it.
 * docs/ARCHITECTURE.md describes the layers.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'A cycle, even of types, means two modules cannot be read or changed apart: move what both need into a third.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'server-rules-are-pure',
      severity: 'error',
      comment: 'The rules (rules/) are decisions over facts, used by the domain and by both stores: they know no store, domain or HTTP code.',
      from: { path: '^packages/server/src/rules/' },
      to: { path: '^packages/server/src/(domain|routes|http|bus|push|limits|ops|store/(sqlite|postgres))/' },
    },
    {
      name: 'server-store-below-domain',
      severity: 'error',
      comment: 'A store keeps rows and applies the rules; it knows nothing of the domain, the routes or HTTP.',
      from: { path: '^packages/server/src/store/' },
      to: { path: '^packages/server/src/(domain|routes|http)/|^packages/server/src/app\\.ts$' },
    },
    {
      name: 'server-domain-knows-no-http',
      severity: 'error',
      comment: 'Domain functions know nothing of HTTP: the routes translate requests into calls and the error catalog into statuses.',
      from: { path: '^packages/server/src/domain/' },
      to: { path: '^packages/server/src/(routes|http)/|^packages/server/src/app\\.ts$' },
    },
    {
      name: 'protocol-stands-alone',
      severity: 'error',
      comment: 'The protocol module is shared by the server and every client: it imports no other package of the project.',
      from: { path: '^packages/protocol/src/' },
      to: { path: '^packages/(server|sdk|web|cli|testkit)/' },
    },
    {
      name: 'sdk-is-runtime-neutral',
      severity: 'error',
      comment: 'The SDK runs in browsers and in Node: it imports the protocol only, never the server, the web app or Node built-ins.',
      from: { path: '^packages/sdk/src/' },
      to: { path: '^packages/(server|web|cli|testkit)/|^(node:|fs$|path$|crypto$|http$|https$)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'sdk-wire-below-conversation',
      severity: 'error',
      comment: 'The wire format (wire/) and the cryptography (crypto/) are what every message is made of: they know no conversation rule, outbox or attachment flow.',
      from: { path: '^packages/sdk/src/(wire|crypto)/' },
      to: { path: '^packages/sdk/src/(conversation|attachments)/' },
    },
    {
      name: 'server-knows-no-client',
      severity: 'error',
      comment: 'The service speaks the protocol; it never imports client code.',
      from: { path: '^packages/server/src/' },
      to: { path: '^packages/(sdk|web|cli)/' },
    },
    {
      name: 'clients-use-the-sdk',
      severity: 'error',
      comment: 'The web app and the command line build on the SDK and the protocol, never on the server.',
      from: { path: '^packages/(web|cli)/src/' },
      to: { path: '^packages/server/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: { conditionNames: ['import', 'types', 'default'] },
  },
};
