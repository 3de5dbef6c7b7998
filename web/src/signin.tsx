// Sign-in: paste a token (or open the link the daemon prints at start).
import { useState } from "preact/hooks";
import { ApiError } from "./api/client";
import { signIn } from "./api/session";
import type { Session } from "./api/types";

export function SignIn({ onSignedIn, error: initialError }: { onSignedIn: (s: Session) => void; error?: string }) {
  const [token, setToken] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(initialError ?? null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await signIn(token));
    } catch (err) {
      setError(err instanceof ApiError && err.status === 401 ? "That token is not valid (revoked or mistyped)." : String((err as Error).message));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>svc</h1>
      <form onSubmit={submit}>
        <label for="token">Access token</label>
        <input
          id="token"
          type="password"
          autocomplete="off"
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
          required
        />
        <p class="hint">
          The admin token is in <code>$SVC_DATA_DIR/token</code>; <code>svc token create</code> makes tokens with fewer rights.
        </p>
        <button type="submit" class="primary" disabled={busy || token.trim() === ""}>
          Sign in
        </button>
        {error ? (
          <div class="error" role="alert">
            {error}
          </div>
        ) : null}
      </form>
    </main>
  );
}
