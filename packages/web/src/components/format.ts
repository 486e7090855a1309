/** How times look: today's as a clock time, older ones with the date. */

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dateFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

function sameDay(a: Date, b: Date): boolean {
  return a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();
}

export function shortTime(ms: number): string {
  const d = new Date(ms);
  return sameDay(d, new Date()) ? timeFmt.format(d) : dateFmt.format(d);
}

export function clockTime(ms: number): string {
  return timeFmt.format(new Date(ms));
}

export function fullTime(ms: number): string {
  return fullFmt.format(new Date(ms));
}

export function dayLabel(ms: number): string {
  const d = new Date(ms);
  return sameDay(d, new Date()) ? 'Today' : new Intl.DateTimeFormat(undefined, { dateStyle: 'full' }).format(d);
}

export function dayKey(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;
}
