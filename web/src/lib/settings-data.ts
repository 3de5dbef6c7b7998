// What Settings reads and writes: the configuration (edited as JSON and
// sent as the smallest deep-merge patch), and the access tokens.
import { ApiError, del, get, post } from "../api/client";
import type { Role, Schemas } from "../api/types";
import { rfc3339 } from "./format";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type JsonObject = { [k: string]: Json };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

/**
 * The patch that turns `before` into `after` under `PUT /api/v1/config`'s
 * deep merge: objects merge key by key (so only changed keys are sent),
 * any other value replaces, and `null` removes a key (back to its default).
 */
export function configPatch(before: JsonObject, after: JsonObject): JsonObject {
  const patch: JsonObject = {};
  for (const [k, v] of Object.entries(after)) {
    const old = before[k];
    if (!(k in before)) {
      patch[k] = v;
    } else if (isObject(old) && isObject(v)) {
      const sub = configPatch(old, v);
      if (Object.keys(sub).length > 0) patch[k] = sub;
    } else if (!deepEqual(old, v)) {
      patch[k] = v;
    }
  }
  for (const k of Object.keys(before)) {
    if (!(k in after)) patch[k] = null;
  }
  return patch;
}

export type Parsed = { ok: true; value: JsonObject } | { ok: false; error: string };

/** The editor's text as a configuration object, or why it is not one. */
export function parseConfig(text: string): Parsed {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `not valid JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (!isObject(v)) return { ok: false, error: "the configuration must be a JSON object ({ ... })" };
  return { ok: true, value: v };
}

/** Dotted paths of the keys a patch sets (`daemon.scan_interval`), or removes. */
export function patchKeys(patch: JsonObject, prefix = ""): { key: string; value: Json }[] {
  const out: { key: string; value: Json }[] = [];
  for (const [k, v] of Object.entries(patch)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (isObject(v) && Object.keys(v).length > 0) out.push(...patchKeys(v, key));
    else out.push({ key, value: v });
  }
  return out;
}

/** An access token as `GET /api/v1/tokens` lists it (never the secret). */
export type TokenInfo = Schemas["TokenInfo"];

/** The answer of `POST /api/v1/tokens`: `token` is shown once, then never again. */
export type NewToken = Schemas["CreatedToken"];

/** The tokens, or null when this caller may not list them (403). */
export async function listTokens(signal?: AbortSignal): Promise<TokenInfo[] | null> {
  try {
    return (await get("/api/v1/tokens", { signal })).tokens;
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) return null;
    throw e;
  }
}

export async function createToken(name: string, role: Role): Promise<NewToken> {
  return post("/api/v1/tokens", { name, role });
}

export async function revokeToken(name: string): Promise<void> {
  await del("/api/v1/tokens/{name}", { params: { name } });
}

/** A token's creation time as RFC 3339 (Unix seconds or a time string). */
export function createdText(created: unknown): string {
  if (typeof created === "number" && Number.isFinite(created)) return rfc3339(created);
  if (typeof created === "string") return created;
  return "–";
}

/** Why a new token's name cannot be sent, or null (the daemon checks the rest). */
export function tokenNameProblem(name: string): string | null {
  return name.trim() === "" ? "a name is needed" : null;
}
