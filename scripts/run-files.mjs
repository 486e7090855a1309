// One run of scripts/test.mjs: Node's test runner over the files in the order given (`node --test`
// sorts them by name), `concurrency` at a time, each in its own process, reported as `--test`
// reports (spec). Writes what each file's top-level tests took, in ms, to `timesFile` as JSON.
//   node scripts/run-files.mjs <concurrency> <timesFile> <file>...
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';

const [concurrency, timesFile, ...files] = process.argv.slice(2);
const times = {};
const took = (data) => {
  if (!data.file || data.nesting !== 0) return;
  const key = relative(process.cwd(), data.file);
  times[key] = (times[key] ?? 0) + (data.details?.duration_ms ?? 0);
};
const stream = run({ files, concurrency: Math.max(1, Number(concurrency)) });
stream.on('test:pass', took);
stream.on('test:fail', (data) => {
  took(data);
  process.exitCode = 1;
});
stream.on('end', () => writeFileSync(timesFile, JSON.stringify(times)));
stream.compose(spec).pipe(process.stdout);
