// The signed-in shell: navigation, who is signed in, the live link, and
// the current view.
import { useEffect, useMemo, useState } from "preact/hooks";
import { EventStream, eventsUrl, type LinkState } from "./api/events";
import { signOut } from "./api/session";
import type { Session } from "./api/types";
import { Ctx } from "./context";
import { parseRoute, type Route } from "./router";
import { VIEWS } from "./views";

function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const f = () => setHash(location.hash);
    addEventListener("hashchange", f);
    // The address may have changed between the first render and now
    // (effects run after paint): catch up with it.
    f();
    return () => removeEventListener("hashchange", f);
  }, []);
  return useMemo(() => parseRoute(hash), [hash]);
}

export function App({ session, onSignedOut }: { session: Session; onSignedOut: () => void }) {
  const route = useRoute();
  const events = useMemo(() => new EventStream(eventsUrl(location)), []);
  const [link, setLink] = useState<LinkState>("connecting");
  useEffect(() => {
    events.start();
    const off = events.onState(setLink);
    return () => {
      off();
      events.stop();
    };
  }, [events]);
  const view = VIEWS.find((v) => v.id === route.view);
  useEffect(() => {
    document.title = view ? `${view.title} · svc` : "svc";
  }, [view]);
  const Component = view?.component;
  return (
    <Ctx.Provider value={{ session, events }}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <div class="shell">
        <nav class="nav" aria-label="Views">
          <div class="brand">svc</div>
          <ul>
            {VIEWS.filter((v) => v.nav).map((v) => (
              <li key={v.id}>
                <a href={`#/${v.id}`} aria-current={route.view === v.id ? "page" : undefined}>
                  {v.title}
                </a>
              </li>
            ))}
          </ul>
          <div class="who">
            <div>
              <span class="name">{session.name}</span> <span class={`role role-${session.role}`}>{session.role}</span>
            </div>
            <div class={`link link-${link}`} role="status" aria-live="polite" data-testid="link-state">
              {link === "live" ? "live" : link === "connecting" ? "connecting…" : "disconnected, retrying"}
            </div>
            {session.csrf ? (
              <button
                type="button"
                onClick={() => {
                  void signOut().finally(onSignedOut);
                }}
              >
                Sign out
              </button>
            ) : null}
          </div>
        </nav>
        <main id="main" class="main" tabIndex={-1}>
          {Component ? (
            <Component route={route} />
          ) : (
            <div class="error" role="alert">
              No view named “{route.view}”.
            </div>
          )}
        </main>
      </div>
    </Ctx.Provider>
  );
}
