import type { ViewProps } from ".";

export function NodePage(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
