# Apple's ReceiptUtility, as Apple's README and tests call it; only the import prefix differs from Apple's library
# (appstoreserverlibrary -> appstoreserver). Type-checked by test_typing.py, never run.
from typing import Optional

from appstoreserver.receipt_utility import ReceiptUtility

receipt_util = ReceiptUtility()
app_receipt = "MI.."
transaction_receipt = "ew0KCSJzaWduYXR1cmUi..."

transaction_id: Optional[str] = receipt_util.extract_transaction_id_from_app_receipt(app_receipt)
legacy_id: Optional[str] = receipt_util.extract_transaction_id_from_transaction_receipt(transaction_receipt)
if transaction_id is not None and legacy_id is not None:
    print(transaction_id.upper(), legacy_id.upper())
