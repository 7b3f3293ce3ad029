// How a bench file runs as a program of its own (`node dist/bench/<name>.js ...`).

/** Runs `main` with the command line's arguments when `mod` is the file node was started with; exits with its code, or 1 after saying why it failed. */
export function runAsProgram(mod: NodeJS.Module, what: string, main: (argv: string[]) => Promise<number>): void {
  if (require.main !== mod) return;
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      process.stderr.write(`${what} failed: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}

/** `--<name>=N`, a count (a whole number, 0 or more); `fallback` when not given. */
export function countOption(argv: readonly string[], name: string, fallback: number): number {
  const raw = argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const n = raw === undefined ? fallback : Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${name}: not a count: ${raw}`);
  return n;
}
