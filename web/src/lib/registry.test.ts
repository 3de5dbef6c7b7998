import { describe, expect, test } from "vitest";
import { byNameThenVersion, installTarget, listingNote, packageState, type RegistryListing, type RegistryPackage, registryUrl } from "./registry";

function pkg(over: Partial<RegistryPackage>): RegistryPackage {
  return {
    name: "svc-plugin-mock",
    type: "plugin",
    version: "v1.0.0",
    description: "the simulated estate",
    author: "svc",
    category: "cloud",
    pricing_model: "free",
    price_usd: 0,
    latest: true,
    installed_version: null,
    problem: null,
    role: "provider",
    ...over,
  };
}

describe("packageState", () => {
  test("the installed version is installed, whatever else it says", () => {
    expect(packageState(pkg({ installed_version: "v1.0.0", category: null }))).toEqual({ kind: "installed", text: "installed" });
  });
  test("a version with a problem or without a category is refused, with why", () => {
    expect(packageState(pkg({ problem: "no binary for linux/x86_64" }))).toEqual({ kind: "refused", text: "no binary for linux/x86_64" });
    expect(packageState(pkg({ category: null })).kind).toBe("refused");
    expect(packageState(pkg({ category: null })).text).toContain("no category");
  });
  test("another version installed: this one replaces it", () => {
    expect(packageState(pkg({ version: "v1.1.0", installed_version: "v1.0.0" }))).toEqual({ kind: "installable", text: "replaces v1.0.0" });
  });
  test("the latest stable says so; an older one says nothing", () => {
    expect(packageState(pkg({})).text).toBe("latest stable");
    expect(packageState(pkg({ latest: false })).text).toBe("");
  });
});

test("installTarget names the exact version", () => {
  expect(installTarget(pkg({ name: "cost-hygiene", version: "v0.2.0" }))).toBe("cost-hygiene@v0.2.0");
});

describe("listingNote", () => {
  const listing = (over: Partial<RegistryListing>): RegistryListing => ({
    source: "https://registry.example/index.json",
    fetched_at: 1000,
    age_seconds: 120,
    from_cache: false,
    packages: [],
    skipped: [],
    warning: null,
    ...over,
  });
  test("a fresh index says where from and when", () => {
    expect(listingNote(listing({}), 1120)).toBe("index of https://registry.example/index.json, fetched 2 min ago.");
  });
  test("a cached index with a warning and skipped entries says all of it", () => {
    const note = listingNote(listing({ from_cache: true, warning: "the registry cannot be reached", skipped: ["a", "b"] }), 4600);
    expect(note).toBe(
      "cached index of https://registry.example/index.json, fetched 1 h ago; 2 malformed entries left out. the registry cannot be reached",
    );
  });
});

test("registryUrl reads registry.url, empty when absent or not a string", () => {
  expect(registryUrl({ registry: { url: " /srv/index.json " } })).toBe("/srv/index.json");
  expect(registryUrl({ registry: { url: 3 } })).toBe("");
  expect(registryUrl({ registry: [] })).toBe("");
  expect(registryUrl({})).toBe("");
  expect(registryUrl(null)).toBe("");
});

test("byNameThenVersion: by name, the newest version first, a release after its pre-release", () => {
  const list = [
    pkg({ name: "b", version: "v1.0.0" }),
    pkg({ name: "a", version: "v1.2.0" }),
    pkg({ name: "a", version: "v1.10.0" }),
    pkg({ name: "a", version: "v2.0.0-rc1" }),
    pkg({ name: "a", version: "v2.0.0" }),
  ];
  expect(byNameThenVersion(list).map((p) => `${p.name}@${p.version}`)).toEqual(["a@v2.0.0", "a@v2.0.0-rc1", "a@v1.10.0", "a@v1.2.0", "b@v1.0.0"]);
});
