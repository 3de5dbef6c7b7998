// Colours of the Graph view: one per provider or per waste verdict, as
// RGBA bytes per node for the renderer, and the legend that names them.
import { WASTE_NO, WASTE_YES, type GraphModel } from "./graph-data";

export type ColorBy = "provider" | "waste";

export type Rgb = readonly [number, number, number];

const KNOWN: Record<string, Rgb> = {
  aws: [0xc2, 0x5e, 0x00],
  azure: [0x1d, 0x5f, 0xd1],
  gcp: [0x15, 0x80, 0x3d],
  kubernetes: [0x6d, 0x28, 0xd9],
};
const OTHERS: Rgb[] = [
  [0x0e, 0x74, 0x90],
  [0xbe, 0x18, 0x5d],
  [0x4d, 0x7c, 0x0f],
  [0x92, 0x40, 0x0e],
  [0x37, 0x41, 0x51],
];
export const WASTE_COLORS: Record<"waste" | "not" | "unknown", Rgb> = {
  waste: [0xc8, 0x1e, 0x1e],
  not: [0x4b, 0x5e, 0x78],
  unknown: [0xb8, 0xc2, 0xcc],
};
/** A node added by a neighbourhood, drawn over. */
export const HIGHLIGHT: Rgb = [0x0a, 0x58, 0xca];
export const SELECTED: Rgb = [0x11, 0x18, 0x27];

export function providerColor(name: string, index: number): Rgb {
  return KNOWN[name] ?? OTHERS[index % OTHERS.length]!;
}

export function cssColor(c: Rgb): string {
  return `rgb(${c[0]}, ${c[1]}, ${c[2]})`;
}

export interface LegendEntry {
  label: string;
  color: Rgb;
  count: number;
}

/** RGBA bytes for the first `model.count` nodes. */
export function nodeColors(model: GraphModel, by: ColorBy): Uint8Array {
  const out = new Uint8Array(model.count * 4);
  const palette = model.providers.map((p, i) => providerColor(p, i));
  for (let i = 0; i < model.count; i++) {
    let c: Rgb;
    if (by === "provider") c = palette[model.provider[i]!] ?? OTHERS[4]!;
    else {
      const w = model.waste[i];
      c = w === WASTE_YES ? WASTE_COLORS.waste : w === WASTE_NO ? WASTE_COLORS.not : WASTE_COLORS.unknown;
    }
    const o = i * 4;
    out[o] = c[0];
    out[o + 1] = c[1];
    out[o + 2] = c[2];
    out[o + 3] = 255;
  }
  return out;
}

/** What each colour means and how many drawn nodes have it. */
export function legend(model: GraphModel, by: ColorBy): LegendEntry[] {
  if (by === "provider") {
    const counts = new Array<number>(model.providers.length).fill(0);
    for (let i = 0; i < model.count; i++) counts[model.provider[i]!]! += 1;
    return model.providers.map((p, i) => ({ label: p || "unknown provider", color: providerColor(p, i), count: counts[i] ?? 0 })).filter((e) => e.count > 0);
  }
  let yes = 0;
  let no = 0;
  for (let i = 0; i < model.count; i++) {
    const w = model.waste[i];
    if (w === WASTE_YES) yes++;
    else if (w === WASTE_NO) no++;
  }
  return [
    { label: "waste", color: WASTE_COLORS.waste, count: yes },
    { label: "not waste", color: WASTE_COLORS.not, count: no },
    { label: "verdict not loaded", color: WASTE_COLORS.unknown, count: model.count - yes - no },
  ].filter((e) => e.count > 0);
}
