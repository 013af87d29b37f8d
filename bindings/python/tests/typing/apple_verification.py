# Apple's README "Verification Usage", then what code does with the decoded payloads; only the import prefix differs
# from Apple's library (appstoreserverlibrary -> appstoreserver). Type-checked by test_typing.py, never run.
from typing import List, Optional

from appstoreserver.models.AppTransaction import AppTransaction
from appstoreserver.models.AutoRenewStatus import AutoRenewStatus
from appstoreserver.models.Environment import Environment
from appstoreserver.models.JWSRenewalInfoDecodedPayload import JWSRenewalInfoDecodedPayload
from appstoreserver.models.JWSTransactionDecodedPayload import JWSTransactionDecodedPayload
from appstoreserver.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserver.models.ResponseBodyV2DecodedPayload import ResponseBodyV2DecodedPayload
from appstoreserver.models.Status import Status
from appstoreserver.models.Subtype import Subtype
from appstoreserver.models.Type import Type
from appstoreserver.signed_data_verifier import SignedDataVerifier, VerificationException, VerificationStatus


def load_root_certificates() -> List[bytes]:
    with open("AppleRootCA-G3.cer", "rb") as f:
        return [f.read()]


root_certificates = load_root_certificates()
enable_online_checks = True
bundle_id = "com.example"
environment = Environment.SANDBOX
app_apple_id = None  # appAppleId must be provided for the Production environment
signed_data_verifier = SignedDataVerifier(root_certificates, enable_online_checks, environment, bundle_id, app_apple_id)


def handle_transaction(transaction: JWSTransactionDecodedPayload) -> Optional[int]:
    product_id: Optional[str] = transaction.productId
    if transaction.type == Type.AUTO_RENEWABLE_SUBSCRIPTION and transaction.expiresDate is not None:
        print(product_id, "expires at", transaction.expiresDate // 1000)
    if transaction.revocationDate is not None:
        print("revoked:", transaction.revocationReason, transaction.rawRevocationReason)
    raw_type: Optional[str] = transaction.rawType
    currency: Optional[str] = transaction.currency
    print(raw_type, currency, transaction.environment == Environment.PRODUCTION, transaction.appAccountToken)
    if transaction.advancedCommerceInfo is not None and transaction.advancedCommerceInfo.items is not None:
        for item in transaction.advancedCommerceInfo.items:
            print(item.SKU)
    quantity: int = transaction.quantity or 1
    price: Optional[int] = transaction.price
    return None if price is None else price * quantity


try:
    signed_notification = "ey.."
    payload: ResponseBodyV2DecodedPayload = signed_data_verifier.verify_and_decode_notification(signed_notification)
    print(payload)
    if payload.notificationType == NotificationTypeV2.SUBSCRIBED and payload.subtype == Subtype.INITIAL_BUY:
        print("new subscriber")
    notification_type: Optional[str] = payload.rawNotificationType
    print(notification_type, payload.rawSubtype, payload.notificationUUID, payload.signedDate)
    data = payload.data
    if data is not None:
        if data.status == Status.ACTIVE or data.rawStatus == 1:
            print("active in", data.environment, data.rawEnvironment, data.appAppleId)
        if data.signedTransactionInfo is not None:
            transaction = signed_data_verifier.verify_and_decode_signed_transaction(data.signedTransactionInfo)
            handle_transaction(transaction)
        if data.signedRenewalInfo is not None:
            renewal_info: JWSRenewalInfoDecodedPayload = signed_data_verifier.verify_and_decode_renewal_info(
                data.signedRenewalInfo)
            if renewal_info.autoRenewStatus == AutoRenewStatus.OFF:
                print("will not renew:", renewal_info.expirationIntent, renewal_info.rawExpirationIntent)
            win_back: List[str] = renewal_info.eligibleWinBackOfferIds or []
            print(renewal_info.renewalPrice, renewal_info.gracePeriodExpiresDate, win_back)
    if payload.summary is not None:
        print(payload.summary.succeededCount, payload.summary.storefrontCountryCodes)
    if payload.appData is not None and payload.appData.signedAppTransactionInfo is not None:
        app_transaction: AppTransaction = signed_data_verifier.verify_and_decode_app_transaction(
            payload.appData.signedAppTransactionInfo)
        print(app_transaction.originalApplicationVersion, app_transaction.receiptType, app_transaction.deviceVerification)
except VerificationException as e:
    print(e)
    if e.status == VerificationStatus.RETRYABLE_VERIFICATION_FAILURE:
        print("try again later")
