import type { ViewProps } from ".";

export function Explorer(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
