// The Policies view's logic, kept out of the component: moving a rule in
// the evaluation order, where a compile error points in a condition, which
// field of the rule editor an API refusal is about, and reading the rules
// of a policy pack file (YAML as the packs in `policies/` are written, or
// JSON) to add them through `POST /api/v1/policies`.
import type { Schemas } from "../api/types";

export type RuleInput = Schemas["PolicyRuleInput"];

/** `ids` with the item at `from` moved to index `to`. */
export function moveItem<T>(items: readonly T[], from: number, to: number): T[] {
  const out = items.slice();
  if (from < 0 || from >= out.length || to < 0 || to >= out.length || from === to) return out;
  const [x] = out.splice(from, 1);
  out.splice(to, 0, x as T);
  return out;
}

/** A condition split around the character a 1-based line and column point at. */
export interface Marked {
  before: string;
  /** The character pointed at; "" when the position is past the end of its line. */
  at: string;
  after: string;
}

export function markPosition(condition: string, line: number, column: number): Marked | null {
  if (!Number.isInteger(line) || !Number.isInteger(column) || line < 1 || column < 1) return null;
  const lines = condition.split("\n");
  if (line > lines.length) return null;
  let offset = 0;
  for (let i = 0; i < line - 1; i++) offset += (lines[i] ?? "").length + 1;
  const text = lines[line - 1] ?? "";
  // Columns count characters (code points), as the compiler reads them.
  const chars = Array.from(text);
  const col = Math.min(column - 1, chars.length);
  const start = offset + chars.slice(0, col).join("").length;
  const at = chars[col] ?? "";
  return { before: condition.slice(0, start), at, after: condition.slice(start + at.length) };
}

export type RuleField = "id" | "condition" | "action" | "message" | "mode" | "form";

/**
 * Which editor field an API refusal of `POST /api/v1/policies` is about:
 * a position is in the condition; the message names the id, action or mode;
 * a 409 is an id already taken.
 */
export function fieldOf(status: number, message: string, details: Record<string, unknown>): RuleField {
  if (status === 409) return "id";
  if (typeof details.line === "number") return "condition";
  const m = message.toLowerCase();
  if (m.includes("condition")) return "condition";
  if (m.includes("rule id") || m.includes(" id ")) return "id";
  if (m.includes("unknown action")) return "action";
  if (m.includes("unknown mode")) return "mode";
  if (m.includes("message")) return "message";
  return "form";
}

/** What reading a pack file gave: its rules, and what was wrong with it. */
export interface PackFile {
  /** The pack's name when the text holds its manifest (`name:`). */
  name: string;
  rules: RuleInput[];
  problems: string[];
}

type Scalar = string;
type YamlMap = Record<string, Scalar | YamlMap[]>;

/** A plain, single- or double-quoted YAML scalar on one line, its comment dropped. */
function scalar(raw: string): string {
  const t = raw.trim();
  if (t.startsWith('"')) {
    const end = closingQuote(t, '"');
    const body = t.slice(0, end + 1);
    try {
      return JSON.parse(body) as string;
    } catch {
      return body.slice(1, -1);
    }
  }
  if (t.startsWith("'")) {
    const end = closingQuote(t, "'");
    return t.slice(1, end).replace(/''/g, "'");
  }
  const hash = t.search(/(^|\s)#/);
  return (hash >= 0 ? t.slice(0, hash) : t).trim();
}

function closingQuote(t: string, q: string): number {
  for (let i = 1; i < t.length; i++) {
    if (q === '"' && t[i] === "\\") {
      i++;
      continue;
    }
    if (t[i] === q) {
      if (q === "'" && t[i + 1] === "'") {
        i++;
        continue;
      }
      return i;
    }
  }
  return t.length;
}

interface Line {
  indent: number;
  text: string;
  no: number;
}

/**
 * The subset of YAML policy packs are written in: top-level keys with
 * scalar values, and `rules:`, a list of maps whose values are scalars or
 * block scalars (`>`, `>-`, `|`, `|-`). Enough for every pack in
 * `policies/`; anything else is reported, not guessed.
 */
function parseYaml(text: string, problems: string[]): YamlMap {
  const lines: Line[] = [];
  text.split(/\r?\n/).forEach((l, i) => {
    if (l.trim() === "---") return;
    lines.push({ indent: l.length - l.trimStart().length, text: l.trimEnd(), no: i + 1 });
  });
  const root: YamlMap = {};
  let i = 0;
  const blank = (l: Line) => l.text.trim() === "" || l.text.trim().startsWith("#");

  // A block scalar's lines (those indented deeper than `parent`), folded or kept.
  function block(style: string, parent: number): string {
    const body: string[] = [];
    let indent = -1;
    while (i < lines.length) {
      const l = lines[i] as Line;
      if (l.text.trim() !== "" && l.indent <= parent) break;
      if (l.text.trim() !== "" && indent < 0) indent = l.indent;
      body.push(l.text.trim() === "" ? "" : l.text.slice(Math.max(indent, 0)));
      i++;
    }
    while (body.length > 0 && body[body.length - 1] === "") body.pop();
    const folded = style.startsWith(">");
    let s = folded ? body.map((b) => (b === "" ? "\n" : b)).join(" ").replace(/ ?\n ?/g, "\n") : body.join("\n");
    if (!style.endsWith("-")) s += "\n";
    return s;
  }

  function value(raw: string, parent: number): string {
    const t = raw.trim();
    if (/^[>|][+-]?$/.test(t)) return block(t, parent);
    return scalar(t);
  }

  // The items of a list whose dashes are at `indent`.
  function list(indent: number): YamlMap[] {
    const items: YamlMap[] = [];
    while (i < lines.length) {
      const l = lines[i] as Line;
      if (blank(l)) {
        i++;
        continue;
      }
      if (l.indent < indent || !l.text.trimStart().startsWith("-")) break;
      if (l.indent > indent) {
        problems.push(`line ${l.no}: unexpected indentation`);
        i++;
        continue;
      }
      const item: YamlMap = {};
      const first = l.text.trimStart().slice(1);
      if (first.trim() === "") {
        // A dash alone: the item's keys follow, indented.
        i++;
        const next = lines.slice(i).find((x) => !blank(x));
        if (next && next.indent > indent && !next.text.trimStart().startsWith("-")) mapInto(item, next.indent);
      } else {
        // The first key is on the dash's line: read it as a line of its own.
        const keyIndent = l.indent + 1 + (first.length - first.trimStart().length);
        lines[i] = { indent: keyIndent, text: " ".repeat(keyIndent) + first.trimStart(), no: l.no };
        mapInto(item, keyIndent);
      }
      items.push(item);
    }
    return items;
  }

  // Keys at `indent` into `m`.
  function mapInto(m: YamlMap, indent: number): void {
    while (i < lines.length) {
      const l = lines[i] as Line;
      if (blank(l)) {
        i++;
        continue;
      }
      if (l.indent < indent) return;
      if (l.indent > indent) {
        problems.push(`line ${l.no}: unexpected indentation`);
        i++;
        continue;
      }
      const t = l.text.trim();
      if (t.startsWith("-")) return;
      const m2 = /^("[^"]*"|'[^']*'|[^:#]+?)\s*:(\s+(.*))?$/.exec(t) ?? /^("[^"]*"|'[^']*'|[^:#]+?)\s*:$/.exec(t);
      if (!m2) {
        problems.push(`line ${l.no}: expected "key: value"`);
        i++;
        continue;
      }
      const key = scalar(m2[1] as string);
      const rest = (m2[3] ?? "").trim();
      i++;
      if (rest === "" || rest.startsWith("#")) {
        // A nested list (or map, which packs do not use).
        const next = lines.slice(i).find((x) => !blank(x));
        if (next && next.text.trimStart().startsWith("-") && next.indent >= indent) {
          m[key] = list(next.indent);
        } else if (next && next.indent > indent) {
          const nested: YamlMap = {};
          mapInto(nested, next.indent);
          m[key] = [nested];
        } else {
          m[key] = "";
        }
      } else {
        m[key] = value(rest, indent);
      }
    }
  }

  mapInto(root, 0);
  return root;
}

const RULE_KEYS = ["id", "condition", "action", "message", "mode"];

function ruleOf(raw: unknown, n: number, problems: string[]): RuleInput | null {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    problems.push(`rule ${n}: not a map of id, condition, action, message, mode`);
    return null;
  }
  const r = raw as Record<string, unknown>;
  const text = (k: string) => (typeof r[k] === "string" ? (r[k] as string) : typeof r[k] === "number" ? String(r[k]) : "");
  const unknown = Object.keys(r).filter((k) => !RULE_KEYS.includes(k));
  if (unknown.length > 0) problems.push(`rule ${n}${text("id") ? ` (${text("id")})` : ""}: unknown key ${unknown.join(", ")}`);
  if (text("id") === "" || text("condition").trim() === "") {
    problems.push(`rule ${n}: needs an id and a condition`);
    return null;
  }
  const rule: RuleInput = {
    id: text("id"),
    condition: text("condition"),
    action: text("action") as RuleInput["action"],
    message: text("message"),
  };
  if (text("mode") !== "") rule.mode = text("mode") as RuleInput["mode"];
  return rule;
}

/**
 * Reads a pack's rule file: YAML (`rules:` with id, condition, action,
 * message, mode) or JSON (`{"rules": [...]}`, or the array alone). The
 * manifest's `name`, when the text holds it, is kept.
 */
export function parsePack(text: string): PackFile {
  const problems: string[] = [];
  const t = text.trim();
  let doc: unknown;
  if (t.startsWith("{") || t.startsWith("[")) {
    try {
      doc = JSON.parse(t);
    } catch (e) {
      return { name: "", rules: [], problems: [`not valid JSON: ${(e as Error).message}`] };
    }
    if (Array.isArray(doc)) doc = { rules: doc };
  } else {
    doc = parseYaml(text, problems);
  }
  const d = (doc ?? {}) as Record<string, unknown>;
  const name = typeof d.name === "string" ? d.name : "";
  if (!Array.isArray(d.rules)) {
    problems.push("no rules: a pack's rule file holds a list under rules:");
    return { name, rules: [], problems };
  }
  const rules: RuleInput[] = [];
  d.rules.forEach((r, i) => {
    const rule = ruleOf(r, i + 1, problems);
    if (rule) rules.push(rule);
  });
  return { name, rules, problems };
}

/** Letters, digits, `.`, `_`, `-`, `:` (the API's rule ids). */
export function validPrefix(prefix: string): boolean {
  return /^[A-Za-z0-9._:-]*$/.test(prefix);
}
