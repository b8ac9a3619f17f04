// Finds the parts that several tools' JSON Schemas repeat (a step's schema, the task fields three tools accept, a
// nullable string) so scripts/tool-parameters.ts writes each once and refers to it, while every tool's schema
// still reads, once evaluated, exactly as before: same keys, same order, same bytes for a model.

/** A part written once under `name`; where it stood, a reference to it. */
class Ref {
  constructor(readonly name: string) {}
  toJSON(): string {
    return `\0ref:${this.name}`;
  }
}

/** Marks, as a key of a `properties` object, where a shared run of properties is spread (`...name`). */
const SPREAD = '\0...';
const spreadName = (key: string): string | null => (key.startsWith(SPREAD) ? key.slice(SPREAD.length) : null);

/** Names a part as the tree a place stands in, apart from the families' names (a part may be named `todo`). */
const PART = '\0part:';

export type Json = null | boolean | number | string | Ref | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Smaller parts than this many lines (as written) stay where they are: a reference would not read better. */
const MIN_LINES = 6;

/** A value as the generated module writes it: JSON, two-space indents, references by name. */
export function emit(value: Json, indent = 0): string {
  const pad = (depth: number) => '  '.repeat(depth);
  if (value instanceof Ref) return value.name;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    const items = value.map((item) => pad(indent + 1) + emit(item, indent + 1));
    return `[\n${items.join(',\n')}\n${pad(indent)}]`;
  }
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.entries(value);
  if (entries.length === 0) return '{}';
  const lines = entries.map(([key, inner]) => {
    const spread = spreadName(key);
    return pad(indent + 1) + (spread ? `...${spread}` : `${JSON.stringify(key)}: ${emit(inner, indent + 1)}`);
  });
  return `{\n${lines.join(',\n')}\n${pad(indent)}}`;
}

const lineCount = (text: string) => text.split('\n').length;
const isObject = (value: Json): value is JsonObject =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Ref);

/** Where a repeated part stands: a whole value (`parent[key]`), or a run of a `properties` object's entries. */
interface Place {
  parent: JsonObject | Json[];
  key: string | number;
  /** For a run: its keys, in order. */
  run?: string[];
  /** The keys from the schema's root down to the place, for naming it. */
  path: (string | number)[];
  /** Which tree it stands in: a tool's schema (its family) or a shared part (PART and its name). */
  tree: string;
}

interface Candidate {
  value: Json;
  lines: number;
  places: Place[];
}

/** One shared part: its name, its value (with references to the parts it uses), the trees that use it. */
export interface Part {
  name: string;
  value: Json;
  /** A run of properties, spread where it stood, rather than a whole value. */
  run: boolean;
  usedBy: Set<string>;
}

/**
 * Replaces, in place, every part of `trees` (tool schemas by family, each `{ toolName: schema }`) that repeats and
 * spans at least MIN_LINES lines by a reference, largest first, and returns the parts in an order where each comes
 * after the parts it refers to.
 */
export function shareRepeats(trees: Record<string, JsonObject>): Part[] {
  const parts = new Map<string, Part>();
  for (;;) {
    const best = largestRepeat(trees, parts);
    if (!best) break;
    const run = best.places[0]!.run !== undefined;
    const name = nameFor(best, parts);
    const part: Part = { name, value: best.value, run, usedBy: new Set() };
    parts.set(name, part);
    for (const place of best.places) {
      part.usedBy.add(place.tree);
      if (place.run) replaceRun(place.parent as JsonObject, place.run, name);
      else (place.parent as Record<string | number, Json>)[place.key] = new Ref(name);
    }
  }
  // A part used only inside other parts serves the trees that use those.
  const users = (part: Part): Set<string> =>
    new Set(
      [...part.usedBy].flatMap((tree) => {
        const outer = parts.get(tree.slice(PART.length));
        return tree.startsWith(PART) && outer ? [...users(outer)] : [tree];
      }),
    );
  const ordered: Part[] = [];
  const visit = (part: Part) => {
    if (ordered.includes(part)) return;
    for (const used of referencedBy(part.value)) visit(parts.get(used)!);
    ordered.push(part);
  };
  for (const part of parts.values()) visit(part);
  return ordered.map((part) => ({ ...part, usedBy: users(part) }));
}

/** The names of the parts a value refers to, in the order it does. */
export function referencedBy(value: Json): string[] {
  const names: string[] = [];
  const walk = (inner: Json) => {
    if (inner instanceof Ref) names.push(inner.name);
    else if (Array.isArray(inner)) inner.forEach(walk);
    else if (isObject(inner))
      for (const [key, item] of Object.entries(inner)) {
        const spread = spreadName(key);
        if (spread) names.push(spread);
        else walk(item);
      }
  };
  walk(value);
  return [...new Set(names)];
}

function replaceRun(properties: JsonObject, run: string[], name: string): void {
  const entries = Object.entries(properties);
  for (const key of Object.keys(properties)) delete properties[key];
  for (const [key, inner] of entries) {
    if (key === run[0]) properties[SPREAD + name] = true;
    if (!run.includes(key)) properties[key] = inner;
  }
}

/** The repeated part with the most lines, if one has at least MIN_LINES; ties go to the first found. */
function largestRepeat(trees: Record<string, JsonObject>, parts: Map<string, Part>): Candidate | null {
  const found = new Map<string, Candidate>();
  const note = (value: Json, text: string, place: Place) => {
    const key = (place.run ? 'run:' : 'value:') + JSON.stringify(value);
    // A run stands in its object without the braces its text has.
    const lines = lineCount(text) - (place.run ? 2 : 0);
    const candidate = found.get(key) ?? { value, lines, places: [] };
    candidate.places.push(place);
    found.set(key, candidate);
  };
  const walk = (value: Json, path: (string | number)[], tree: string) => {
    if (Array.isArray(value)) {
      value.forEach((item, i) => {
        if (isWhole(item)) note(item, emit(item), { parent: value, key: i, path: [...path, i], tree });
        walk(item, [...path, i], tree);
      });
    } else if (isObject(value)) {
      const entries = Object.entries(value).filter(([key]) => !spreadName(key));
      for (const [key, item] of entries) {
        if (isWhole(item)) note(item, emit(item), { parent: value, key, path: [...path, key], tree });
        walk(item, [...path, key], tree);
      }
      if (path.at(-1) === 'properties') noteRuns(value, entries, path, tree, note);
    }
  };
  for (const [family, tools] of Object.entries(trees))
    for (const [tool, schema] of Object.entries(tools)) walk(schema, [tool], family);
  for (const part of parts.values())
    walk(part.value, part.run ? [part.name, 'properties'] : [part.name], PART + part.name);
  let best: Candidate | null = null;
  for (const candidate of found.values())
    if (candidate.places.length > 1 && candidate.lines >= MIN_LINES && candidate.lines > (best?.lines ?? 0))
      best = candidate;
  return best;
}

const isWhole = (value: Json): boolean =>
  (Array.isArray(value) && value.length > 0) || (isObject(value) && Object.keys(value).length > 0);

/** Every run of two or more neighbouring entries of a `properties` object, as a candidate. */
function noteRuns(
  properties: JsonObject,
  entries: [string, Json][],
  path: (string | number)[],
  tree: string,
  note: (value: Json, text: string, place: Place) => void,
): void {
  const keys = Object.keys(properties);
  for (let from = 0; from < entries.length; from++)
    for (let to = from + 2; to <= entries.length; to++) {
      const slice = entries.slice(from, to);
      // Neighbours in the object itself, not across a spread already made.
      const start = keys.indexOf(slice[0]![0]);
      if (keys.indexOf(slice.at(-1)![0]) - start !== slice.length - 1) continue;
      const run = Object.fromEntries(slice);
      note(run, emit(run), { parent: properties, key: slice[0]![0], run: Object.keys(run), path, tree });
    }
}

/**
 * A name that says what the part is: by its content where it has no words of its own (`stringOrNull`,
 * `stringList`), `<property>Values` for an enum, `<item>Fields` for a run of an item's properties, else the
 * property it is (or, for a list's items, the property's singular). A name taken is qualified by the properties
 * around the place.
 */
function nameFor(candidate: Candidate, parts: Map<string, Part>): string {
  const place = candidate.places[0]!;
  const { path } = place;
  const properties = path.filter((_key, i) => path[i - 1] === 'properties').map(String);
  const owner = properties.at(-1) ?? String(path[0]);
  const base = place.run
    ? `${path.at(-2) === 'items' ? singular(String(path.at(-3))) : String(path.at(-2))}Fields`
    : (contentName(candidate.value) ?? nameOfPlace(path, owner));
  let name = base;
  for (let outer = properties.length - 2; parts.has(name) && outer >= 0; outer--)
    name = properties[outer] + capital(name);
  for (let n = 2; parts.has(name); n++) name = `${base}${n}`;
  return name;
}

function nameOfPlace(path: (string | number)[], owner: string): string {
  const last = String(path.at(-1));
  if (last === 'enum') return `${owner}Values`;
  if (last === 'items') return singular(owner);
  return path.at(-2) === 'properties' ? last : owner + capital(last);
}

/** `stringOrNull` for a union of plain types, `stringList` for a list of one; null for anything else. */
function contentName(value: Json): string | null {
  if (Array.isArray(value) && value.every(isPlainType))
    return value.map((branch, i) => (i === 0 ? typeName(branch) : capital(typeName(branch)))).join('Or');
  if (isObject(value) && Object.keys(value).join() === 'type,items' && value['type'] === 'array')
    return isPlainType(value['items']!) ? `${typeName(value['items']!)}List` : null;
  return null;
}

/** `{ type }` or `{ type, format }`: a value named by its type (or format: `dateTime`). */
const isPlainType = (value: Json) =>
  isObject(value) && Object.keys(value).every((key) => key === 'type' || key === 'format');

const typeName = (plain: Json) => {
  const { type, format } = plain as JsonObject;
  return String(format ?? type).replace(/-(\w)/g, (_, c: string) => c.toUpperCase());
};

const singular = (word: string) => (word.length > 3 && word.endsWith('s') ? word.slice(0, -1) : word);
const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);
