/** Entry point: environment → config → createApp → listen; graceful shutdown on SIGTERM and SIGINT. */
// First: V8 settings that must hold before the service allocates anything (v8-flags.ts).
import './v8-flags.js';
import { createApp } from './app.js';
import { ConfigError, parseConfig } from './config.js';
import { readBuildInfo } from './build-info.js';
import { buildInfoFile, defaultWebRoot } from './paths.js';
import { NewerSchemaError } from './store/errors.js';
import { runtimeWarning } from './runtime.js';

/** Exit codes that restarting cannot cure, so a supervisor should stop (deploy/svc.service). */
const EXIT_CONFIG = 2;
const EXIT_NEWER_SCHEMA = 3;

async function main(): Promise<void> {
  let config;
  try {
    config = parseConfig(process.env, { webRoot: defaultWebRoot(), build: readBuildInfo(buildInfoFile) });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`configuration error: ${err.message}\n`);
      process.exit(EXIT_CONFIG);
    }
    throw err;
  }
  const app = await createApp(config, {
    // Nothing written since can be promised durable: stop, so that a restart recovers from what
    // is really on disk (the unit restarts on this code).
    onStoreFatal: (err) => {
      process.stderr.write(`${JSON.stringify({ level: 'fatal', msg: 'store failed; stopping', err: String(err) })}\n`);
      process.exit(1);
    },
  });
  const runtime = runtimeWarning(process.version);
  if (runtime) app.deps.log.warn(runtime);
  if (config.pushAllowPrivateTargets)
    app.deps.log.warn('PUSH_ALLOW_PRIVATE_TARGETS=1: push may reach loopback and private addresses; for tests only');

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.deps.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        app.deps.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  await app.fastify.listen({ port: config.port, host: config.host });
}

main().catch((err: unknown) => {
  process.stderr.write(`failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(err instanceof NewerSchemaError ? EXIT_NEWER_SCHEMA : 1);
});
