/**
 * The password: from SVC_PASSWORD, else typed at a terminal without echo. Never from an argument,
 * where every user of the machine could read it in the process list.
 */
import { CliError, EXIT } from './errors.js';

/** Reads one line from the terminal with echo off; Ctrl-C ends svc. */
function prompt(question: string): Promise<string> {
  const input = process.stdin;
  return new Promise((resolve, reject) => {
    process.stderr.write(question);
    let typed = '';
    const done = (f: () => void) => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      process.stderr.write('\n');
      f();
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done(() => resolve(typed));
        if (ch === '\u0003') return done(() => reject(new CliError('interrupted', 130)));
        if (ch === '\u007f' || ch === '\b') typed = [...typed].slice(0, -1).join('');
        else typed += ch;
      }
    };
    input.setRawMode(true);
    input.resume();
    input.on('data', onData);
  });
}

/**
 * The password of `what` (an account, or this machine's state file). `confirm`: asked twice when
 * typed, for a new account.
 */
export async function password(env: NodeJS.ProcessEnv, what: string, o: { confirm?: boolean } = {}): Promise<string> {
  const given = env.SVC_PASSWORD;
  if (given !== undefined && given !== '') return given;
  if (!process.stdin.isTTY) throw new CliError('no password: set SVC_PASSWORD, or run svc in a terminal to type it', EXIT.usage);
  const first = await prompt(`Password for ${what}: `);
  if (first === '') throw new CliError('an empty password is not accepted', EXIT.usage);
  if (o.confirm && (await prompt('Again, to be sure: ')) !== first) throw new CliError('the two passwords differ', EXIT.usage);
  return first;
}
