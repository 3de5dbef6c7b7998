// How numbers, money and times are shown everywhere in the dashboard.

const usd = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", maximumFractionDigits: 0 });
const usdCents = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD", minimumFractionDigits: 2, maximumFractionDigits: 2 });
const count = new Intl.NumberFormat("en-US");

/** Dollars a month: whole dollars from $100 up, cents below. */
export function money(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  return Math.abs(v) >= 100 ? usd.format(v) : usdCents.format(v);
}

export function num(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return "–";
  return count.format(v);
}

/** RFC 3339 in UTC, to the second. */
export function rfc3339(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** "3 min ago", "in 2 h", "5 d ago" relative to `nowSeconds`. */
export function relative(unixSeconds: number, nowSeconds: number = Date.now() / 1000): string {
  const d = nowSeconds - unixSeconds;
  const a = Math.abs(d);
  let s: string;
  if (a < 45) s = `${Math.round(a)} s`;
  else if (a < 2700) s = `${Math.round(a / 60)} min`;
  else if (a < 64800) s = `${Math.round(a / 3600)} h`;
  else s = `${Math.round(a / 86400)} d`;
  return d >= 0 ? `${s} ago` : `in ${s}`;
}

/** Parses "30m", "12h", "7d", "2w" (or plain seconds) into seconds. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+)\s*([smhdw]?)\s*$/.exec(text);
  if (!m || !m[1]) return null;
  const n = Number(m[1]);
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2] ?? ""] ?? 1;
  return n * unit;
}

/** The telling parts of a CRN: `crn:svc:aws:r:ec2:volume:acct:vol-0abc` -> `ec2:volume:vol-0abc`. */
export function shortCrn(crn: string): string {
  const p = crn.split(":");
  if (p.length < 8 || p[0] !== "crn") return crn;
  return [p[4], p[5], p.slice(7).join(":")].join(":");
}

export function milliseconds(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}
