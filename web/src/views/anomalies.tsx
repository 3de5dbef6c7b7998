import type { ViewProps } from ".";

export function Anomalies(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
