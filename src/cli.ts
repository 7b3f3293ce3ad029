// The cri-docker-shim command: parse flags (exit 2 on bad ones), start, and on SIGTERM or
// SIGINT stop gracefully and exit 0. A start-up failure exits 1 with the reason.
// main.ts runs this (runCli), from the one-file bundle of it when the build made one.
import { startShim, type RunningShim } from './app';
import type { EarlyDockerAnswers } from './docker/early-answers';
import { FlagError, parseFlags, usage } from './config/flags';
import { notifyReady } from './config/systemd-notify';
import { SHIM_VERSION } from './shim/context';
import { errorMessage } from './errors';
import { createLogger } from './util/logger';

async function main(argv: string[], early: EarlyDockerAnswers | undefined): Promise<number> {
  let parsed;
  try {
    parsed = parseFlags(argv);
  } catch (err) {
    if (err instanceof FlagError) {
      process.stderr.write(`cri-docker-shim: ${err.message}\nRun 'cri-docker-shim --help' for the list of flags.\n`);
      return 2;
    }
    throw err;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  if (parsed.kind === 'version') {
    // cri-dockerd's shape ("cri-dockerd 0.3.x (commit)"), the Node it runs on in the brackets:
    // the single executable carries its own.
    process.stdout.write(`cri-docker-shim ${SHIM_VERSION} (node ${process.version})\n`);
    return 0;
  }
  if (parsed.kind === 'buildinfo') {
    // cri-dockerd's --buildinfo lines, with Node.js where it names Go.
    process.stdout.write(`Program: cri-docker-shim\nVersion: ${SHIM_VERSION}\nNode.js version: ${process.version}\nPlatform: ${process.platform}/${process.arch}\n`);
    return 0;
  }

  const log = createLogger(parsed.config.logLevel, parsed.config.logFormat);
  // cri-dockerd's unit reloads with SIGHUP, which would end a Node process: there is nothing to
  // reload (settings are read at start), so it is said and otherwise ignored, from the start on.
  process.on('SIGHUP', () => log.info('SIGHUP: nothing to reload; restart the shim to apply new settings'));
  let shim: RunningShim;
  try {
    shim = await startShim(parsed.config, log, early);
  } catch (err) {
    log.fatal({ error: errorMessage(err) }, 'start-up failed');
    process.stderr.write(`cri-docker-shim: ${errorMessage(err)}\n`);
    return 1;
  }
  await notifyReady(process.env, log);

  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals): void => {
      if (stopping) {
        log.info({ signal }, 'already stopping; waiting for in-flight calls');
        return;
      }
      stopping = true;
      log.info({ signal }, 'stopping');
      resolve();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  await shim.stop();
  log.info('stopped');
  return 0;
}

/** Runs the command to its end and exits with its code; `early`: Docker's answers main.ts asked for. */
export function runCli(argv: string[], early?: EarlyDockerAnswers): void {
  main(argv, early).then(
    (code) => {
      process.exitCode = code;
      // Open handles (keep-alive sockets to Docker) must not keep a stopped shim alive.
      setTimeout(() => process.exit(code), 200).unref();
    },
    (err: unknown) => {
      process.stderr.write(`cri-docker-shim: unexpected error: ${errorMessage(err)}\n`);
      process.exit(1);
    },
  );
}
