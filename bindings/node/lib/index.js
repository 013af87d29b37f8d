'use strict';
// The package's exports: Apple's Node library names (classes, enums) and the library's additions.
const spec = require('../generated/spec.js');
const native = require('./native.js');
const { SignedDataVerifier } = require('./verifier.js');
const { AppStoreServerAPIClient } = require('./client.js');
const { VerificationException, APIException, AppStoreServerError } = require('./errors.js');
const signing = require('./signing.js');
const { ReceiptUtility, ReceiptVerifier } = require('./receipts.js');
const { ExternalSigner } = require('./signer.js');
const roots = require('./roots.js');
const { Ledger } = require('./ledger.js');

module.exports = {
  AppStoreServerAPIClient,
  APIException,
  SignedDataVerifier,
  VerificationException,
  ReceiptUtility,
  PromotionalOfferSignatureCreator: signing.PromotionalOfferSignatureCreator,
  PromotionalOfferV2SignatureCreator: signing.PromotionalOfferV2SignatureCreator,
  IntroductoryOfferEligibilitySignatureCreator: signing.IntroductoryOfferEligibilitySignatureCreator,
  AdvancedCommerceInAppSignatureCreator: signing.AdvancedCommerceInAppSignatureCreator,
  AppStoreServerError,
  ReceiptVerifier,
  ExternalSigner,
  Ledger,
  appleRootCertificates: roots.appleRootCertificates,
  appleReceiptRootCertificates: roots.appleReceiptRootCertificates,
  appleRootCertificateDetails: roots.appleRootCertificateDetails,
  /** The package version. */
  version: require('../package.json').version,
  /** The version of the loaded libappstoreserver. */
  libraryVersion: native.version(),
  ...spec.ENUMS,
  VerificationStatus: spec.VerificationStatus,
  LibraryStatus: spec.LibraryStatus,
  FailureReason: spec.FailureReason,
};
