// Bundle the extension (node, vscode external) and the chat view script (browser) into dist/.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");
const common = { bundle: true, minify: production, sourcemap: !production, logLevel: "warning" };

await Promise.all([
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
