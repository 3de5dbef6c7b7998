// The dashboard's views, in the order of the navigation.
import type { FunctionComponent } from "preact";
import type { Route } from "../router";
import { Anomalies } from "./anomalies";
import { Explorer } from "./explorer";
import { GraphView } from "./graph";
import { History } from "./history";
import { NodePage } from "./node";
import { Overview } from "./overview";
import { Policies } from "./policies";
import { Remediation } from "./remediation";
import { Settings } from "./settings";
import { Terraform } from "./terraform";
import { Waste } from "./waste";

export interface ViewProps {
  route: Route;
}

export interface View {
  id: string;
  title: string;
  component: FunctionComponent<ViewProps>;
  /** Shown in the navigation (a node's page is reached from the others). */
  nav: boolean;
}

export const VIEWS: readonly View[] = [
  { id: "overview", title: "Overview", component: Overview, nav: true },
  { id: "explorer", title: "Explorer", component: Explorer, nav: true },
  { id: "node", title: "Resource", component: NodePage, nav: false },
  { id: "graph", title: "Graph", component: GraphView, nav: true },
  { id: "waste", title: "Waste ledger", component: Waste, nav: true },
  { id: "anomalies", title: "Anomalies", component: Anomalies, nav: true },
  { id: "remediation", title: "Remediation", component: Remediation, nav: true },
  { id: "policies", title: "Policies", component: Policies, nav: true },
  { id: "terraform", title: "Terraform", component: Terraform, nav: true },
  { id: "history", title: "History", component: History, nav: true },
  { id: "settings", title: "Settings", component: Settings, nav: true },
];
