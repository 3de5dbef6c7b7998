// The registry panel's logic: what a listed package's row says and offers,
// and what the listing says about where it came from.
import type { Schemas } from "../api/types";
import { relative } from "./format";
import type { JsonObject } from "./settings-data";

export type RegistryPackage = Schemas["RegistryPackage"];
export type RegistryListing = Schemas["RegistryListing"];
export type InstalledPackage = Schemas["InstalledPackage"];

/** What a listed version is to this daemon, and whether it can be installed. */
export type PackageState =
  | { kind: "installed"; text: string }
  | { kind: "refused"; text: string }
  | { kind: "installable"; text: string };

/** The install request's name: this exact version. */
export function installTarget(p: RegistryPackage): string {
  return `${p.name}@${p.version}`;
}

/**
 * A listed version as the operator meets it: installed already, refused
 * by the registry's own checks (a problem, or no category the registry
 * assigned), or installable (replacing another version when one is in).
 */
export function packageState(p: RegistryPackage): PackageState {
  if (p.installed_version === p.version) return { kind: "installed", text: "installed" };
  if (p.problem) return { kind: "refused", text: p.problem };
  if (!p.category) return { kind: "refused", text: "no category assigned by the registry: refused at install" };
  if (p.installed_version) return { kind: "installable", text: `replaces ${p.installed_version}` };
  return { kind: "installable", text: p.latest ? "latest stable" : "" };
}

/** Where the listing came from and how old it is, with the registry's warning. */
export function listingNote(l: RegistryListing, nowSeconds: number = Date.now() / 1000): string {
  const age = relative(l.fetched_at, nowSeconds);
  const base = l.from_cache ? `cached index of ${l.source}, fetched ${age}` : `index of ${l.source}, fetched ${age}`;
  const skipped = l.skipped.length ? `; ${l.skipped.length} malformed ${l.skipped.length === 1 ? "entry" : "entries"} left out` : "";
  return l.warning ? `${base}${skipped}. ${l.warning}` : `${base}${skipped}.`;
}

/** `registry.url` from the configuration as `GET /api/v1/config` shows it ("" when none). */
export function registryUrl(config: JsonObject | null | undefined): string {
  const section = config?.["registry"];
  if (!section || typeof section !== "object" || Array.isArray(section)) return "";
  const url = (section as JsonObject)["url"];
  return typeof url === "string" ? url.trim() : "";
}

/** Packages in a stable order: name, then the newest version first. */
export function byNameThenVersion(list: RegistryPackage[]): RegistryPackage[] {
  const parts = (v: string) =>
    v
      .replace(/^v/, "")
      .split(/[.-]/)
      .map((x) => (/^\d+$/.test(x) ? Number(x) : x));
  const cmp = (a: string, b: string) => {
    const pa = parts(a);
    const pb = parts(b);
    for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
      const x = pa[i];
      const y = pb[i];
      if (x === y) continue;
      // A release sorts after its pre-releases (v1.0.0 > v1.0.0-rc1).
      if (x === undefined) return 1;
      if (y === undefined) return -1;
      if (typeof x === "number" && typeof y === "number") return x - y;
      return String(x) < String(y) ? -1 : 1;
    }
    return 0;
  };
  return [...list].sort((a, b) => (a.name === b.name ? cmp(b.version, a.version) : a.name < b.name ? -1 : 1));
}
