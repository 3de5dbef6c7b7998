import type { ViewProps } from ".";

export function Remediation(_props: ViewProps) {
  return <p>Not built yet.</p>;
}
