// Image references as Docker understands them, normalised the way Docker and kubelet do:
// "busybox" is docker.io/library/busybox:latest, a registry host is recognised by a dot, a
// port or "localhost", and a digest is kept (with or without a tag beside it).
import { InvalidArgumentError } from '../errors';
import { quote } from '../util/quote';

const DEFAULT_DOMAIN = 'docker.io';
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';
const OFFICIAL_REPO_PREFIX = 'library/';
const DEFAULT_TAG = 'latest';
const MAX_NAME_LENGTH = 255;

const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_LABEL = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = new RegExp(`^(?:${DOMAIN_LABEL}(?:\\.${DOMAIN_LABEL})*|\\[[0-9a-fA-F:.]+\\])(?::[0-9]+)?$`);
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-fA-F0-9]{32,}$/;
const IMAGE_ID = /^(?:sha256:)?[a-f0-9]{64}$/;
const IMAGE_ID_PREFIX = /^(?:sha256:)?[a-f0-9]{1,64}$/;

export interface ImageReference {
  /** Registry host, with its port if any: "docker.io", "127.0.0.1:5000". */
  readonly domain: string;
  /** Repository path within the registry: "library/busybox". */
  readonly path: string;
  /** domain/path. */
  readonly repository: string;
  readonly tag: string | undefined;
  readonly digest: string | undefined;
  /** The one reference to pull: repository@digest when there is a digest, else repository:tag. */
  readonly pullRef: string;
  /** repository[:tag][@digest], with "latest" filled in when neither was given. */
  readonly normalized: string;
  /** The input named neither a tag nor a digest. */
  readonly nameOnly: boolean;
}

/** Parses and normalises an image reference; throws InvalidArgumentError naming `field`. */
export function parseImageReference(input: string, field = 'image.image'): ImageReference {
  const text = input.trim();
  const bad = (why: string): InvalidArgumentError =>
    new InvalidArgumentError(`${field} ${quote(input)} is not a valid image reference: ${why}`);
  if (text === '') throw new InvalidArgumentError(`${field} is required`);

  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw bad('the digest is malformed');
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw bad('the tag is malformed');
  }

  let domain = DEFAULT_DOMAIN;
  let path = rest;
  const slash = rest.indexOf('/');
  if (slash >= 0) {
    const first = rest.slice(0, slash);
    if (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase()) {
      domain = first;
      path = rest.slice(slash + 1);
      if (!DOMAIN.test(domain)) throw bad('the registry host is malformed');
    }
  }
  if (domain === LEGACY_DEFAULT_DOMAIN) domain = DEFAULT_DOMAIN;
  if (domain === DEFAULT_DOMAIN && !path.includes('/')) path = OFFICIAL_REPO_PREFIX + path;
  if (path === '' || !path.split('/').every((c) => PATH_COMPONENT.test(c))) {
    throw bad('the repository name must be lowercase letters, digits and separators');
  }
  const repository = `${domain}/${path}`;
  if (repository.length > MAX_NAME_LENGTH) throw bad(`the name is longer than ${MAX_NAME_LENGTH} characters`);

  const nameOnly = tag === undefined && digest === undefined;
  if (nameOnly) tag = DEFAULT_TAG;
  const pullRef = digest !== undefined ? `${repository}@${digest}` : `${repository}:${tag}`;
  const normalized = `${repository}${tag !== undefined ? `:${tag}` : ''}${digest !== undefined ? `@${digest}` : ''}`;
  return { domain, path, repository, tag, digest, pullRef, normalized, nameOnly };
}

/** A full image ID ("sha256:<64 hex>" or the bare 64 hex digits). */
export function isFullImageId(text: string): boolean {
  return IMAGE_ID.test(text);
}

/**
 * Checks a reference that names an existing image (status, removal): an image ID, an ID prefix,
 * or a name. Returns it trimmed, to hand to Docker as given (Docker resolves short IDs itself,
 * which a normalised name would prevent).
 */
export function checkLocalImageRef(input: string, field = 'image.image'): string {
  const text = input.trim();
  if (IMAGE_ID_PREFIX.test(text)) return text;
  parseImageReference(text, field);
  return text;
}
