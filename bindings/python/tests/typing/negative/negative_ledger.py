# Deliberate type errors in ledger code (see negative_models.py). Type-checked, never run.
from appstoreserver.ledger import Ledger
from appstoreserver.models.Environment import Environment
from appstoreserver.signed_data_verifier import SignedDataVerifier

verifier = SignedDataVerifier([b""], False, Environment.SANDBOX, "com.example")
ledger = Ledger.open("sqlite::memory:", verifier)
sub = ledger.subscription("1")
print(sub.status)  # E: union-attr
ledger.customer("token", at="yesterday")  # E: arg-type
ledger.customer("token", as_of="yesterday")  # E: arg-type
ledger.subscription("1", 1, 2)  # E: call-arg
count: str = ledger.summary().events  # E: assignment
