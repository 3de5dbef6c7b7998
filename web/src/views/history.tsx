import type { ViewProps } from ".";

export function History(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
