/**
 * V8 settings of the service process, applied before anything else is loaded (main.ts imports
 * this first).
 *
 * No allocation-site pretenuring. V8 watches where objects are allocated, and once most objects
 * of one allocation site outlive a young-generation collection it allocates all later objects of
 * that site directly in the old generation. An event stream is a long-lived HTTP request: a few
 * thousand of them make Node's request, response and header objects look long-lived, and from
 * then on every short request (each send, each ack) has those objects made in the old generation.
 * Dead there until the next full collection, they keep the young objects they point to alive
 * through every scavenge, which promotes them too. Measured after 10,000 idle streams had come
 * and gone (`npm run bench -- --only idle,dm`, `--trace-gc-nvp`): 1.26 MB promoted per scavenge
 * and 2.8 ms pauses, against 6 KB and 0.8 ms in a process that never held streams; with this
 * setting, 17 KB and 1.1 ms, and the p99 at 2,000 DM/s 1.4 ms instead of 3.5–13.7
 * (docs/BENCHMARKS.md).
 *
 * The old generation may grow to four times what the last full collection left alive before the
 * next one (`--heap-growing-percent=300`: V8's largest factor, where it otherwise picks one from
 * 1.1 up by its own measure of collection speed). Each full collection stops the process for 2–10
 * ms and marks on another thread meanwhile; on a busy machine every event in flight waits for it,
 * and the slowest deliveries of a paced run were the ones sent around those collections. At half
 * the maximum rate of two instances, each instance made one every 1–2 s with a live heap of about
 * 20 MB; with this setting 4–5 in a whole two-run benchmark instead of 7, none in most phases, for a
 * heap of up to about 90 MB under load instead of 30–40 (docs/BENCHMARKS.md).
 *
 * Set here rather than as a `node` flag, so that it holds however the service is started (the
 * unit, `npm start`, the benchmark, a container); V8 reads this flag at each collection, so
 * setting it after start-up takes effect; the heap's growing factor too is read at each collection.
 */
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--no-allocation-site-pretenuring');
setFlagsFromString('--heap-growing-percent=300');
