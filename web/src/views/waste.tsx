import type { ViewProps } from ".";

export function Waste(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
