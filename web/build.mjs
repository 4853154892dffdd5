// Bundles the UI into OUTDIR: one script and one stylesheet named by their content's hash, and index.html naming them.
// Usage: node build.mjs OUTDIR NODE_MODULES (where npm ci put the pinned tools and libraries)
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { copyFileSync, mkdirSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const [out, nodeModules] = process.argv.slice(2).map((p) => p && resolve(p));
if (!out || !nodeModules) throw new Error('usage: node build.mjs OUTDIR NODE_MODULES');
const esbuild = createRequire(join(nodeModules, 'index.js'))('esbuild');
// Type-check first (esbuild only strips types), against the libraries npm put in nodeModules.
const tsconfig = join(dirname(out), 'tsconfig.build.json');
writeFileSync(tsconfig, JSON.stringify({
  extends: join(here, 'tsconfig.json'),
  compilerOptions: { baseUrl: nodeModules, paths: { '*': ['*'] } },
  include: [join(here, 'src/*.ts')],
}));
execFileSync(process.execPath, [join(nodeModules, 'typescript/bin/tsc'), '-p', tsconfig], { stdio: 'inherit' });

rmSync(out, { recursive: true, force: true });
mkdirSync(join(out, 'assets'), { recursive: true });

const result = await esbuild.build({
  entryPoints: [join(here, 'src/main.ts')],
  bundle: true,
  minify: true,
  format: 'iife',
  target: 'es2020',
  outdir: join(out, 'assets'),
  entryNames: 'app-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
  nodePaths: [nodeModules],
});
const files = Object.keys(result.metafile.outputs).map((f) => basename(f));
const js = files.find((f) => f.endsWith('.js'));
const css = files.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error('esbuild made no script or no stylesheet: ' + files.join(', '));
const html = readFileSync(join(here, 'src/index.html'), 'utf8').replace('APP_JS', js).replace('APP_CSS', css);
writeFileSync(join(out, 'index.html'), html);
copyFileSync(join(here, 'src/favicon.svg'), join(out, 'assets/favicon.svg'));
