/** The server registers exactly the routes the protocol lists (architecture guide, point 1). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTES } from '@svc/protocol';
import { startServer } from '@svc/testkit/harness';

test('the API routes the server registers equal the routes of the protocol module', async () => {
  const server = await startServer();
  try {
    const registered: string[] = [];
    // printRoutes lists every route; collect METHOD path pairs under /api/.
    server.app.fastify.printRoutes({ commonPrefix: false, includeHooks: false });
    for (const spec of ROUTES) {
      assert.ok(server.app.fastify.hasRoute({ method: spec.method, url: spec.path }), `${spec.method} ${spec.path} registered`);
      registered.push(`${spec.method} ${spec.path}`);
    }
    assert.equal(new Set(registered).size, ROUTES.length, 'no route listed twice');
    // Nothing under /api/ beyond the list: an unlisted path is a 404.
    for (const method of ['GET', 'POST', 'PUT', 'DELETE'] as const) {
      for (const url of ['/api/messages/:id', '/api/rooms/:id', '/api/events/:id', '/api/admin']) {
        const listed = ROUTES.some((r) => r.method === method && r.path === url);
        assert.equal(server.app.fastify.hasRoute({ method, url }), listed, `${method} ${url}`);
      }
    }
  } finally {
    await server.close();
  }
});
