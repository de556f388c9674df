// Builds the studio page into dist/: one bundled module (CodeMirror included), no network at run time.
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

mkdirSync("dist", { recursive: true });
await build({
  entryPoints: ["src/main.js"],
  bundle: true,
  format: "esm",
  minify: true,
  sourcemap: false,
  target: ["es2020"],
  outfile: "dist/app.js",
});
for (const file of ["index.html", "style.css", "favicon.svg"]) copyFileSync(`src/${file}`, `dist/${file}`);
console.log("studio page built in studio_web/dist");
