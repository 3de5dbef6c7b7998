import type { ViewProps } from ".";

export function Policies(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
