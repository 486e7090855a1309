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

/** A file's size as people read it: "980 bytes", "12.4 KB", "3.1 MB" (powers of 1,000, like the limit). */
export function fileSize(bytes: number): string {
  if (bytes < 1_000) return `${bytes} ${bytes === 1 ? 'byte' : 'bytes'}`;
  if (bytes < 1_000_000) return `${(bytes / 1_000).toFixed(1)} KB`;
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}
