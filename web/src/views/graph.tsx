import type { ViewProps } from ".";

export function GraphView(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
