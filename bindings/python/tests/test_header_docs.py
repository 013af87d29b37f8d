"""The docstrings of the methods that wrap a C function are the header's: each method marked @from_header starts with
the summary of its C function as include/appstoreserver.h has it now (read with the generator's own header parser,
not from a generated file), so a header comment changed without `scripts/generate` fails here."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from typing import Any, Dict, List, Tuple

import appstoreserver

from conftest import REPO


def header_summaries() -> Dict[str, str]:
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from specgen.header_parser import prototype_summaries
    finally:
        sys.path.remove(str(REPO / "scripts"))
    return prototype_summaries((REPO / "include" / "appstoreserver.h").read_text(encoding="utf-8"))


def documented() -> List[Tuple[str, Any]]:
    """(qualified name, function) of every function and method of the package marked @from_header."""
    found: Dict[str, Any] = {}
    for info in pkgutil.walk_packages(appstoreserver.__path__, "appstoreserver."):
        if ".models." in info.name:
            continue
        module = importlib.import_module(info.name)
        for _, obj in vars(module).items():
            members = [obj] + ([m for _, m in vars(obj).items()] if inspect.isclass(obj) else [])
            for m in members:
                fn = getattr(m, "__func__", m)
                if getattr(fn, "__c_function__", None):
                    found[f"{fn.__module__}.{fn.__qualname__}"] = fn
    return sorted(found.items())


def normal(text: str) -> str:
    return " ".join(text.split())


def test_every_wrapped_method_starts_with_the_header_summary() -> None:
    summaries = header_summaries()
    found = documented()
    assert len(found) >= 20, [name for name, _ in found]
    for name, fn in found:
        c_function = fn.__c_function__
        assert c_function in summaries, f"{name}: {c_function} has no comment in include/appstoreserver.h"
        first = fn.__doc__.split("\n\n")[0]
        assert normal(first) == normal(summaries[c_function]), \
            f"{name}: the docstring differs from the header's {c_function} (run scripts/generate)"


def test_the_wrapping_methods_are_the_ones_documented() -> None:
    # A few known pairs, so that the check above cannot pass on a package where nothing is marked; and the Python
    # notes follow the summary.
    from appstoreserver.ledger import Ledger
    from appstoreserver.receipt_utility import ReceiptUtility
    from appstoreserver.signed_data_verifier import SignedDataVerifier

    pairs = [(SignedDataVerifier.verify_and_decode_notification, "appstore_verifier_verify_notification"),
             (ReceiptUtility.extract_transaction_id_from_app_receipt, "appstore_receipt_extract_transaction_id"),
             (Ledger.open, "appstore_ledger_open"),
             (appstoreserver.apple_root_certificate_details, "appstore_apple_root_der")]
    for fn, c_function in pairs:
        assert getattr(fn, "__c_function__", None) == c_function, fn
    assert "raises VerificationException" in (SignedDataVerifier.verify_and_decode_notification.__doc__ or "")
    assert inspect.getdoc(ReceiptUtility.extract_transaction_id_from_app_receipt).split("\n\n")[1].startswith(
        "None when the receipt has no in-app purchases")
