// kubelet's matchImages semantics (pure): a pattern is host[:port][/path]. Each dot-separated
// host label may hold globs (*, ?, [..]) matching within that one label; the label count must
// be equal; the port must be equal (none matches none); the pattern's path must be a prefix
// of the image's path.

interface SplitRef {
  labels: string[];
  port: string;
  path: string;
}

function splitSchemeless(text: string): SplitRef {
  const slash = text.indexOf('/');
  const hostPort = slash < 0 ? text : text.slice(0, slash);
  const path = slash < 0 ? '' : text.slice(slash);
  let host = hostPort;
  let port = '';
  const m = /^(.*):(\d*)$/.exec(hostPort);
  if (m && !hostPort.endsWith(']')) {
    host = m[1]!;
    port = m[2]!;
  }
  return { labels: host.toLowerCase().split('.'), port, path };
}

/** A Go filepath.Match-style glob for one host label as a RegExp; undefined when malformed. */
function labelGlob(pattern: string): RegExp | undefined {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else if (ch === '[') {
      const close = pattern.indexOf(']', i + 2);
      if (close < 0) return undefined;
      let body = pattern.slice(i + 1, close);
      if (body.startsWith('^')) body = `^${body.slice(1)}`;
      re += `[${body.replace(/\\/g, '\\\\')}]`;
      i = close;
    } else if (ch === '\\') {
      const next = pattern[++i];
      if (next === undefined) return undefined;
      re += next.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    } else re += ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  try {
    return new RegExp(`^${re}$`);
  } catch {
    return undefined;
  }
}

/** Whether `image` (a reference without scheme) is one `pattern` covers. */
export function matchesImage(pattern: string, image: string): boolean {
  const glob = splitSchemeless(pattern.trim());
  const target = splitSchemeless(image.trim());
  if (glob.port !== target.port) return false;
  if (glob.labels.length !== target.labels.length) return false;
  if (!target.path.startsWith(glob.path)) return false;
  return glob.labels.every((label, i) => labelGlob(label)?.test(target.labels[i]!) === true);
}

/** The registry host of an image reference (what Registry-keyed caches are keyed by). */
export function registryOf(image: string): string {
  const slash = image.indexOf('/');
  return (slash < 0 ? image : image.slice(0, slash)).toLowerCase();
}

/** Why a matchImages entry is unusable, or undefined when it is fine. */
export function matchPatternProblem(pattern: string): string | undefined {
  const text = pattern.trim();
  if (text === '') return 'is empty';
  if (text.includes('://')) return 'must not have a scheme';
  if (!/^[^:/]+(:\d+)?$/.test(text.split('/')[0]!)) return 'must be host[:port][/path] with a numeric port';
  const { labels, path } = splitSchemeless(text);
  if (/[*?[]/.test(path)) return 'may use wildcards only in the host';
  if (labels.some((l) => l === '' || labelGlob(l) === undefined)) return 'has an empty or malformed host label';
  return undefined;
}
