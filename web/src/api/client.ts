// The one way the dashboard talks to the daemon: same-origin fetch with the
// session cookie, the CSRF header on writes, and the API's error body turned
// into an `ApiError` whose message can be shown as it is.
import type { Paths } from "./types";

/** An answer other than 2xx, with the API's error code and message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }

  /** A stale plan hash, an illegal move, a scan already running. */
  get isConflict(): boolean {
    return this.status === 409;
  }
}

let csrfToken: string | null = null;
let onUnauthorized: (() => void) | null = null;

/** The CSRF token of the current session, sent on every write. */
export function setCsrf(token: string | null): void {
  csrfToken = token;
}

/** Called when the daemon answers 401: the session ended or was revoked. */
export function setUnauthorizedHandler(f: (() => void) | null): void {
  onUnauthorized = f;
}

type Method = "GET" | "POST" | "PUT" | "DELETE";

/** Query parameters; undefined and empty values are left out. */
export type Query = Record<string, string | number | boolean | undefined | null>;

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === "") continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function errorOf(res: Response): Promise<ApiError> {
  let code = "http_" + res.status;
  let message = `${res.status} ${res.statusText}`;
  let details: Record<string, unknown> = {};
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string; details?: Record<string, unknown> } };
    if (body.error) {
      code = body.error.code ?? code;
      message = body.error.message ?? message;
      details = body.error.details ?? {};
    }
  } catch {
    // Not the API's error body (a proxy's page, say): keep the status line.
  }
  return new ApiError(res.status, code, message, details);
}

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  accept?: string;
  signal?: AbortSignal;
}

export async function request(method: Method, path: string, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { Accept: opts.accept ?? "application/json" };
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  let res: Response;
  try {
    res = await fetch(withQuery(path, opts.query), {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: "same-origin",
      signal: opts.signal,
    });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiError(0, "unreachable", "the daemon cannot be reached");
  }
  if (!res.ok) {
    const err = await errorOf(res);
    if (res.status === 401 && onUnauthorized) onUnauthorized();
    throw err;
  }
  return res;
}

/** Paths of the API that answer GET. */
type GetPath = { [P in keyof Paths]: Paths[P] extends { get: unknown } ? P : never }[keyof Paths];
type GetOk<P extends GetPath> = Paths[P] extends {
  get: { responses: { 200: { content: { "application/json": infer T } } } };
}
  ? T
  : unknown;

/**
 * `GET` a documented path; the answer is typed from the OpenAPI document.
 * `path` is the template (`/api/v1/graph/nodes/{crn}`); `params` fills it.
 */
export async function get<P extends GetPath>(
  path: P,
  opts: RequestOptions & { params?: Record<string, string> } = {},
): Promise<GetOk<P>> {
  const res = await request("GET", fill(path, opts.params), opts);
  return (await res.json()) as GetOk<P>;
}

type WritePath<M extends "post" | "put" | "delete"> = {
  [P in keyof Paths]: Paths[P] extends { [K in M]: unknown } ? P : never;
}[keyof Paths];

type BodyOf<P extends keyof Paths, M extends "post" | "put" | "delete"> = Paths[P] extends {
  [K in M]: { requestBody?: { content: { "application/json": infer B } } };
}
  ? B
  : never;

type OkOf<P extends keyof Paths, M extends "post" | "put" | "delete"> = Paths[P] extends {
  [K in M]: { responses: infer R };
}
  ? R extends { 200: { content: { "application/json": infer T } } }
    ? T
    : R extends { 201: { content: { "application/json": infer T } } }
      ? T
      : R extends { 202: { content: { "application/json": infer T } } }
        ? T
        : unknown
  : unknown;

/** `POST` a documented path with its typed body. */
export async function post<P extends WritePath<"post">>(
  path: P,
  body: BodyOf<P, "post">,
  opts: RequestOptions & { params?: Record<string, string> } = {},
): Promise<OkOf<P, "post">> {
  const res = await request("POST", fill(path, opts.params), { ...opts, body });
  return (await res.json()) as OkOf<P, "post">;
}

/** `PUT` a documented path with its typed body. */
export async function put<P extends WritePath<"put">>(
  path: P,
  body: BodyOf<P, "put">,
  opts: RequestOptions = {},
): Promise<OkOf<P, "put">> {
  const res = await request("PUT", path, { ...opts, body });
  return (await res.json()) as OkOf<P, "put">;
}

/** `DELETE` a documented path. */
export async function del<P extends WritePath<"delete">>(
  path: P,
  opts: RequestOptions & { params?: Record<string, string> } = {},
): Promise<OkOf<P, "delete">> {
  const res = await request("DELETE", fill(path, opts.params), opts);
  const text = await res.text();
  return (text ? JSON.parse(text) : null) as OkOf<P, "delete">;
}

/** Fills `{name}` segments of a path template, percent-encoding each value. */
export function fill(template: string, params?: Record<string, string>): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, k: string) => {
    const v = params?.[k];
    if (v === undefined) throw new Error(`no value for {${k}} in ${template}`);
    return encodeURIComponent(v);
  });
}
