// Entry point: find or make a session, then show the app.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { setUnauthorizedHandler } from "./api/client";
import { currentSession, signIn, takeTokenFromLocation } from "./api/session";
import type { Session } from "./api/types";
import { App } from "./app";
import { SignIn } from "./signin";
import "./style.css";

function Root() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    setUnauthorizedHandler(() => setSession(null));
    const linked = takeTokenFromLocation(location, history);
    (linked ? signIn(linked) : currentSession()).then(setSession, (e: Error) => {
      setError(e.message);
      setSession(null);
    });
  }, []);
  if (session === undefined) {
    return (
      <div class="loading" role="status">
        Connecting…
      </div>
    );
  }
  if (session === null) return <SignIn onSignedIn={setSession} error={error} />;
  return <App session={session} onSignedOut={() => setSession(null)} />;
}

const root = document.getElementById("app");
if (root) render(<Root />, root);
