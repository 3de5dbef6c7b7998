// What every view may read: who is signed in, and the live ledger stream.
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { EventStream } from "./api/events";
import { allows, type Role, type Session } from "./api/types";

export interface AppContext {
  session: Session;
  events: EventStream;
}

export const Ctx = createContext<AppContext | null>(null);

export function useApp(): AppContext {
  const c = useContext(Ctx);
  if (!c) throw new Error("useApp outside the signed-in app");
  return c;
}

/**
 * Whether the signed-in token's role allows what needs `need`. The UI hides
 * what this denies; the server refuses it anyway (403).
 */
export function useCan(need: Role): boolean {
  return allows(useApp().session.role, need);
}
