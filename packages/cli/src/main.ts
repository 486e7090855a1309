#!/usr/bin/env node
/** The `svc` command: runs one command and ends with its exit status (timers of the SDK do not keep it alive). */
import { run } from './run.js';

process.exit(await run(process.argv.slice(2)));
