// Dates as a person reads them, in the browser's own locale and time zone.

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function when(iso: string | null, never = 'Never'): string {
  if (!iso) return never;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTime.format(d);
}

export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

export const PLAN_NAMES: Record<string, string> = { free: 'Free', plus: 'Plus', pro: 'Pro', team: 'Team' };
export const ROLE_NAMES: Record<string, string> = { owner: 'Owner', admin: 'Admin', member: 'Member' };

const numberFormat = new Intl.NumberFormat();

/** 1234 -> "1,234" (the browser's grouping). */
export function num(n: number): string {
  return numberFormat.format(n);
}

/** A signed ledger amount: "+500", "−12" (a true minus sign, read as "minus"). */
export function signed(n: number): string {
  return n > 0 ? `+${num(n)}` : n < 0 ? `−${num(-n)}` : '0';
}

/** A slot or key name made readable: "max_output_side" -> "Max output side". */
export function readable(name: string): string {
  const words = name.replace(/[_-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Bytes as a person reads them: "812 B", "14.2 KB", "3.1 MB". */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}
