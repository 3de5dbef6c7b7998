import type { ViewProps } from ".";

export function Settings(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
