// What the image RPCs need beyond the shared ShimContext: where credentials come from when a
// pull request carries none.
import type { CredentialSource } from '../../credentials/providers';
import type { ShimContext } from '../context';

export interface ImageContext extends ShimContext {
  readonly credentials: CredentialSource;
}
