// The ESM entry of the package: the generated named exports (generated/index.mjs, from scripts/specgen/node.py's
// HAND_WRITTEN_EXPORTS), plus the hand-written exports that list does not name yet (ExternalSigner). A name listed
// there too is no conflict: the local export below shadows the star export (the same object).
import lib from './index.js';

export * from './generated/index.mjs';
export { default } from './generated/index.mjs';
export const { ExternalSigner } = lib;
