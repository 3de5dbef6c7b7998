// Hash routes: `#/view/rest?query`. The hash keeps every view a plain link
// that survives a reload, and needs no server-side routing.

export interface Route {
  view: string;
  /** Path segments after the view, each percent-decoded. */
  rest: string[];
  query: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const h = hash.replace(/^#\/?/, "");
  const [path = "", search = ""] = h.split("?", 2);
  const parts = path.split("/").filter((p) => p !== "");
  const decoded = parts.map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  return { view: decoded[0] ?? "overview", rest: decoded.slice(1), query: new URLSearchParams(search) };
}

/** The hash of a view with its segments and query (empty values left out). */
export function href(view: string, rest: string[] = [], query: Record<string, string | number | undefined> = {}): string {
  const path = [view, ...rest.map((r) => encodeURIComponent(r))].join("/");
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return `#/${path}${s ? "?" + s : ""}`;
}

export function navigate(to: string): void {
  if (location.hash !== to) location.hash = to;
}
