// Writes src/generated/index.ts, one import point for every CRI message and enum type that
// proto-loader-gen-types produced (each file's names are unique: X and X__Output).
import { readdirSync, writeFileSync } from 'node:fs';

const dir = new URL('../src/generated/runtime/v1/', import.meta.url);
const lines = readdirSync(dir)
  .filter((f) => f.endsWith('.ts'))
  .sort()
  .map((f) => `export * from './runtime/v1/${f.slice(0, -3)}';`);
writeFileSync(new URL('../src/generated/index.ts', import.meta.url), lines.join('\n') + '\n');
