import type { ViewProps } from ".";

export function Overview(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
