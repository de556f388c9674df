// The studio pages' import graph has no cycle (docs/development.md, "The studio page's modules"):
// each module of src/ and the modules it imports by a relative path (`import … from "./x.js"`,
// `import "./x.js"`, `export … from "./x.js"`; the pages use no dynamic import()). A module that
// needs to call one above it gets a callback its page's entry registers (state.js) instead.
//   node import-cycles.mjs [folder]   (src/ beside this script by default)
// Exit 0 and one line when there is no cycle; exit 1 on an import of a module that is not there, or
// on a cycle: each one the walk meets (at least one whenever there is any), as a chain of modules.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(process.argv[2] || join(dirname(fileURLToPath(import.meta.url)), "src"));
// Anchored at a line's start, so an import quoted in a comment or inside a line of code is not one.
const IMPORT = /^[ \t]*(?:import|export)\s+(?:[^;"'`]*?\sfrom\s*)?["'](\.{1,2}\/[^"']+)["']/gm;

const modules = readdirSync(root, { recursive: true }).map(String)
  .filter((path) => /\.m?js$/.test(path) && !path.split(/[\\/]/).includes("node_modules")).sort();
const graph = new Map();
const problems = [];
for (const module of modules) {
  const text = readFileSync(join(root, module), "utf8");
  const targets = [];
  for (const [, specifier] of text.matchAll(IMPORT)) {
    const target = relative(root, resolve(root, dirname(module), specifier));
    if (!existsSync(join(root, target))) problems.push(`${module} imports ${specifier}, which is not there`);
    else targets.push(target);
  }
  graph.set(module, [...new Set(targets)]);
}

// Depth-first: an import that reaches a module still on the path closes a cycle.
const cycles = new Map();  // each cycle once, keyed from its first module in sorted order
const done = new Set();
const path = [];
function visit(module) {
  if (done.has(module)) return;
  const at = path.indexOf(module);
  if (at >= 0) {
    const cycle = path.slice(at);
    const start = cycle.indexOf([...cycle].sort()[0]);
    const turned = [...cycle.slice(start), ...cycle.slice(0, start)];
    cycles.set(turned.join(" "), turned);
    return;
  }
  path.push(module);
  for (const target of graph.get(module) || []) visit(target);
  path.pop();
  done.add(module);
}
for (const module of modules) visit(module);

for (const cycle of cycles.values()) problems.push(`import cycle: ${[...cycle, cycle[0]].join(" -> ")}`);
if (problems.length) {
  for (const problem of problems) console.error(problem);
  console.error(`${cycles.size} import cycle(s) in ${relative(process.cwd(), root) || "."}: a module that calls one `
    + "above it takes a callback its page's entry registers (state.js `calls`), not an import.");
  process.exit(1);
}
const imports = [...graph.values()].reduce((sum, targets) => sum + targets.length, 0);
console.log(`no import cycle among the ${modules.length} modules of ${relative(process.cwd(), root) || "."} `
  + `(${imports} imports)`);
