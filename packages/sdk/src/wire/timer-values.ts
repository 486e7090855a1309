/**
 * The disappearing messages timer's choices (Signal's): seconds, 0 = off, each with the words the
 * app shows for it (its radio button's accessible name, and the log line's value).
 */
export const TIMER_CHOICES = [
  { seconds: 0, label: 'Off' },
  { seconds: 30, label: '30 seconds' },
  { seconds: 5 * 60, label: '5 minutes' },
  { seconds: 60 * 60, label: '1 hour' },
  { seconds: 8 * 60 * 60, label: '8 hours' },
  { seconds: 24 * 60 * 60, label: '1 day' },
  { seconds: 7 * 24 * 60 * 60, label: '1 week' },
  { seconds: 28 * 24 * 60 * 60, label: '4 weeks' },
] as const;

export type TimerSeconds = (typeof TIMER_CHOICES)[number]['seconds'];

/** The timer values a message or a timer change may carry: exactly the choices. */
export const TIMER_SECONDS: readonly number[] = TIMER_CHOICES.map((c) => c.seconds);

export function isTimerSeconds(v: unknown): v is TimerSeconds {
  return typeof v === 'number' && TIMER_SECONDS.includes(v);
}

/** The words for a timer value ("Off", "30 seconds" … "4 weeks"). */
export function timerLabel(seconds: number): string {
  const c = TIMER_CHOICES.find((x) => x.seconds === seconds);
  if (!c) throw new RangeError(`not a timer choice: ${seconds}`);
  return c.label;
}
