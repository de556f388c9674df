// Builds the studio pages into dist/: one bundled module each (CodeMirror included in the knowledge
// page's), no network at run time.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

mkdirSync("dist", { recursive: true });
const bundle = { bundle: true, format: "esm", minify: true, sourcemap: false, target: ["es2020"] };
await build({ ...bundle, entryPoints: ["src/main.js"], outfile: "dist/app.js" });
await build({ ...bundle, entryPoints: ["src/facts.js"], outfile: "dist/facts.js" });
for (const file of ["index.html", "style.css", "favicon.svg", "facts.html", "facts.css"]) {
  copyFileSync(`src/${file}`, `dist/${file}`);
}
console.log("studio pages built in studio_web/dist");
