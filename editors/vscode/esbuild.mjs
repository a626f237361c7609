// Bundle the extension (node, vscode external) and the chat view script (browser) into dist/; with --unit, each unit
// test into out/test/unit/ instead (where tsc put them: their paths from __dirname hold).
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const common = { bundle: true, minify: production, sourcemap: !production, logLevel: "warning" };

// Transpiled alone, not type-checked: lint's `tsc --noEmit` checks these very files (tsconfig.json), and a second
// whole tsc compile here cost the test run ~50 s of its 56.
const unit = {
  ...common,
  entryPoints: ["test/unit/*.test.ts"],
  outdir: "out/test/unit",
  platform: "node",
  format: "cjs",
  target: "node18",
  external: ["vscode"],
};

await Promise.all(process.argv.includes("--unit") ? [esbuild.build(unit)] : [
  esbuild.build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node18",
    external: ["vscode"],
  }),
  esbuild.build({
    ...common,
    entryPoints: ["src/webview/main.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "es2020",
  }),
]);
