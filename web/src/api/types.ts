// Short names for the API's wire shapes, generated from
// schemas/openapi.yaml into schema.d.ts (`npm run gen:types`).
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type Paths = paths;

/** A token's role, weakest first. */
export type Role = "viewer" | "operator" | "admin";

export const ROLES: readonly Role[] = ["viewer", "operator", "admin"];

/** Whether a caller holding `have` may do what needs `need`. */
export function allows(have: Role, need: Role): boolean {
  return ROLES.indexOf(have) >= ROLES.indexOf(need);
}

/**
 * Who is signed in: `POST /api/v1/session` and `GET /api/v1/session`;
 * `csrf` is sent as `X-CSRF-Token` with every write (null for bearer callers).
 */
export type Session = Schemas["SessionInfo"];
