// Runs the one-file bundle of the shim (see main.ts) with V8's code cache for it. The cache
// is made at build time by scripts/bundle.mjs through the same function, so the source V8
// sees is the same byte for byte; a cache V8 refuses (another Node, other flags, a changed
// bundle) only costs the time it would have saved.
import * as fs from 'node:fs';
import { Module, createRequire } from 'node:module';
import * as path from 'node:path';
import * as vm from 'node:vm';


type ModuleFunction = (exports: object, require: NodeJS.Require, module: { exports: object }, filename: string, dirname: string) => void;

interface CompiledBundle {
  /** Runs the bundle as the main module would run; gives its exports. */
  run(): unknown;
  /** Whether V8 refused the cache (undefined when there was none to offer). */
  readonly cacheRejected: boolean | undefined;
  /** V8's compiled code for the bundle as it stands now (after run(), the functions run so far too). */
  codeCache(): Buffer;
}

export function compileBundle(bundleFile: string, cacheFile: string): CompiledBundle {
  let cachedData: Buffer | undefined;
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {
    cachedData = undefined;
  }
  return compileBundleSource(fs.readFileSync(bundleFile, 'utf8'), cachedData, bundleFile);
}

/**
 * The same from the bundle's text and cache in memory (the single executable carries them as
 * assets); `filename` names it in stack traces and is where its require() resolves from.
 */
export function compileBundleSource(text: string, cachedData: Buffer | undefined, filename: string): CompiledBundle {
  let source = text;
  // A shebang line is not JavaScript inside the module wrapper; keep the line count the same.
  if (source.startsWith('#!')) source = `//${source.slice(2)}`;
  const script = new vm.Script(Module.wrap(source), { filename, cachedData });
  return {
    cacheRejected: cachedData === undefined ? undefined : script.cachedDataRejected === true,
    codeCache: () => script.createCachedData(),
    run() {
      const moduleFunction = script.runInThisContext() as ModuleFunction;
      const module = { exports: {} };
      moduleFunction.call(module.exports, module.exports, createRequire(filename), module, filename, path.dirname(filename));
      return module.exports;
    },
  };
}
