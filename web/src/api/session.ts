// Signing in: a token is exchanged once for an HttpOnly session cookie and
// a CSRF token; the token itself is never stored by the page.
import { ApiError, request, setCsrf } from "./client";
import type { Session } from "./types";

/** The signed-in caller, or null when there is no valid session. */
export async function currentSession(): Promise<Session | null> {
  try {
    const res = await request("GET", "/api/v1/session");
    const s = (await res.json()) as Session;
    setCsrf(s.csrf ?? null);
    return s;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return null;
    throw e;
  }
}

export async function signIn(token: string): Promise<Session> {
  const res = await request("POST", "/api/v1/session", { body: { token: token.trim() } });
  const s = (await res.json()) as Session;
  setCsrf(s.csrf ?? null);
  return s;
}

export async function signOut(): Promise<void> {
  try {
    await request("DELETE", "/api/v1/session");
  } finally {
    setCsrf(null);
  }
}

/**
 * The token in the link the daemon prints at start (`/#token=...`), taken
 * out of the address bar at once so that it is not kept in history.
 */
export function takeTokenFromLocation(loc: Location, hist: History): string | null {
  const m = /(?:^#|&)token=([0-9A-Za-z._~-]+)/.exec(loc.hash);
  if (!m || !m[1]) return null;
  hist.replaceState(null, "", loc.pathname + loc.search + "#/overview");
  return m[1];
}
