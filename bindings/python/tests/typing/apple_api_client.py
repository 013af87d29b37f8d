# Apple's README "API Usage" and "Receipt Usage", then responses' typed fields and enums; only the import prefix
# differs from Apple's library (appstoreserverlibrary -> appstoreserver). Type-checked by test_typing.py, never run.
from typing import List, Optional

from appstoreserver.api_client import APIError, APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserver.models.Environment import Environment
from appstoreserver.models.ExtendReasonCode import ExtendReasonCode
from appstoreserver.models.ExtendRenewalDateRequest import ExtendRenewalDateRequest
from appstoreserver.models.HistoryResponse import HistoryResponse
from appstoreserver.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserver.models.NotificationHistoryResponse import NotificationHistoryResponse
from appstoreserver.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserver.models.OrderLookupStatus import OrderLookupStatus
from appstoreserver.models.SendTestNotificationResponse import SendTestNotificationResponse
from appstoreserver.models.Status import Status
from appstoreserver.models.TransactionHistoryRequest import Order, ProductType, TransactionHistoryRequest
from appstoreserver.receipt_utility import ReceiptUtility


def read_private_key(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


private_key = read_private_key("/path/to/key/SubscriptionKey_ABCDEFGHIJ.p8")  # Implementation will vary

key_id = "ABCDEFGHIJ"
issuer_id = "99b16628-15e4-4668-972b-eeff55eeff55"
bundle_id = "com.example"
environment = Environment.SANDBOX

client = AppStoreServerAPIClient(private_key, key_id, issuer_id, bundle_id, environment)

try:
    response: SendTestNotificationResponse = client.request_test_notification()
    print(response)
    token: Optional[str] = response.testNotificationToken
    if token is not None:
        status = client.get_test_notification_status(token)
        print(status.signedPayload, status.sendAttempts)
except APIException as e:
    print(e)

receipt_util = ReceiptUtility()
app_receipt = "MI.."

try:
    transaction_id = receipt_util.extract_transaction_id_from_app_receipt(app_receipt)
    if transaction_id is not None:
        transactions: List[str] = []
        history: Optional[HistoryResponse] = None
        request: TransactionHistoryRequest = TransactionHistoryRequest(
            sort=Order.ASCENDING,
            revoked=False,
            productTypes=[ProductType.AUTO_RENEWABLE]
        )
        while history is None or history.hasMore:
            revision = history.revision if history is not None else None
            history = client.get_transaction_history(transaction_id, revision, request, GetTransactionHistoryVersion.V2)
            for transaction in history.signedTransactions or []:
                transactions.append(transaction)
        print(transactions)

        statuses = client.get_all_subscription_statuses(transaction_id, [Status.ACTIVE, Status.BILLING_RETRY])
        for group in statuses.data or []:
            for item in group.lastTransactions or []:
                if item.status == Status.ACTIVE:
                    print(group.subscriptionGroupIdentifier, item.originalTransactionId, item.signedRenewalInfo)
                raw_status: Optional[int] = item.rawStatus
                print(raw_status)
        print(statuses.environment == Environment.SANDBOX, statuses.rawEnvironment, statuses.appAppleId)

        info = client.get_transaction_info(transaction_id)
        signed: Optional[str] = info.signedTransactionInfo
        print(signed)

        extension = client.extend_subscription_renewal_date(transaction_id, ExtendRenewalDateRequest(
            extendByDays=7, extendReasonCode=ExtendReasonCode.CUSTOMER_SATISFACTION,
            requestIdentifier="fdf964a4-233b-486c-aac1-97d8d52688ac"))
        print(extension.success, extension.effectiveDate)

        refunds = client.get_refund_history(transaction_id, None)
        print(refunds.hasMore, refunds.revision, len(refunds.signedTransactions or []))

    lookup = client.look_up_order_id("MQ12ABCDEF")
    if lookup.status == OrderLookupStatus.VALID:
        print(lookup.signedTransactions)

    notifications: NotificationHistoryResponse = client.get_notification_history(None, NotificationHistoryRequest(
        startDate=1698148900000, endDate=1698148950000, notificationType=NotificationTypeV2.SUBSCRIBED,
        transactionId="999733843", onlyFailures=True))
    for history_item in notifications.notificationHistory or []:
        print(history_item.signedPayload, history_item.sendAttempts)
    print(notifications.paginationToken, notifications.hasMore)
except APIException as e:
    print(e.http_status_code, e.raw_api_error, e.error_message)
    if e.api_error == APIError.TRANSACTION_ID_NOT_FOUND:
        print("unknown transaction")
