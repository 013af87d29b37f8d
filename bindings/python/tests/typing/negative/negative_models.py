# Deliberate type errors that Apple-typed models must make a type checker report: test_typing.py expects exactly the
# errors marked `# E: <mypy error code>` on their lines, and no other. Type-checked, never run.
from typing import List

from appstoreserver.jws_signature_creator import IntroductoryOfferEligibilitySignatureCreator
from appstoreserver.models.Environment import Environment
from appstoreserver.models.JWSTransactionDecodedPayload import JWSTransactionDecodedPayload
from appstoreserver.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserver.models.Subtype import Subtype
from appstoreserver.models.TransactionHistoryRequest import Order, TransactionHistoryRequest
from appstoreserver.signed_data_verifier import SignedDataVerifier

verifier = SignedDataVerifier([b""], False, Environment.SANDBOX, "com.example")
transaction = verifier.verify_and_decode_signed_transaction("ey..")
price: str = transaction.price  # E: assignment
seconds = transaction.expiresDate // 1000  # E: operator
print(transaction.pricee)  # E: attr-defined
transaction.environment = "Sandbox"  # E: assignment
transaction.rawType = 3  # E: assignment

payload = verifier.verify_and_decode_notification("ey..")
if payload.notificationType == Subtype.INITIAL_BUY:  # E: comparison-overlap
    print(payload.notificationType)
items: List[int] = payload.data.signedTransactionInfo  # E: union-attr, assignment

request = TransactionHistoryRequest(sort=Order.ASCENDING)
request.sortt = Order.DESCENDING  # E: attr-defined
request.productTypes = [NotificationTypeV2.SUBSCRIBED]  # E: list-item
TransactionHistoryRequest(revoked="no")  # E: arg-type

creator = IntroductoryOfferEligibilitySignatureCreator(b"", "KEY", "issuer", "com.example")
jws: bytes = creator.create_signature("product", True, "1234")  # E: assignment


def payload_price(p: JWSTransactionDecodedPayload) -> int:
    return p.price  # E: return-value
