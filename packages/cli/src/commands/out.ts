/** Where a command writes: results on standard output, everything about them on standard error. */
export interface Out {
  /** One line of result (a message, a list entry): standard output. */
  line(s: string): Promise<void>;
  /** What happened or is happening (signed in, waiting): standard error. */
  info(s: string): void;
}

export const processOut: Out = {
  line: (s) => new Promise((resolve, reject) => process.stdout.write(`${s}\n`, (err) => (err ? reject(err) : resolve()))),
  info: (s) => void process.stderr.write(`svc: ${s}\n`),
};
