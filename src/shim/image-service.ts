// The ImageService as the shim serves it; RPCs missing here answer UNIMPLEMENTED.
import type { ImageServiceImpl } from '../cri/types';
import type { ShimContext } from './context';

export function imageService(_shim: ShimContext): ImageServiceImpl {
  return {};
}
