"""Code written for Apple's appstoreserverlibrary runs after changing the import: every module, class, enum member,
model constructor parameter (positional order, keyword-only raw twins), APIError code and client method of Apple's
library 3.1.2 (apple_surface.json, written down from Apple's library, not from this project's generator) exists
here with the same name and accepts the same calls."""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

SURFACE = json.loads((Path(__file__).with_name("apple_surface.json")).read_text())


@pytest.mark.parametrize("module,names", SURFACE["modules"].items())
def test_modules(module: str, names: list) -> None:
    m = importlib.import_module(f"appstoreserver.{module}")
    for n in names:
        assert hasattr(m, n), f"appstoreserver.{module}.{n}"


@pytest.mark.parametrize("module", SURFACE["modelModules"])
def test_model_modules(module: str) -> None:
    m = importlib.import_module(f"appstoreserver.models.{module}")
    if module == "LibraryUtility":  # Apple's helpers module: its public names
        assert all(hasattr(m, n) for n in ("AppStoreServerLibraryEnumMeta", "AttrsRawValueAware", "metadata_key"))
    else:
        assert hasattr(m, module), f"appstoreserver.models.{module}.{module}"


def test_enums() -> None:
    problems = []
    for name, e in SURFACE["enums"].items():
        cls = getattr(importlib.import_module(f"appstoreserver.models.{e['module']}"), name)
        ours = [[m.name, m.value] for m in cls]
        if ours != e["members"]:
            problems.append(f"{name}: {ours} != {e['members']}")
        if isinstance(e["members"][0][1], str):
            assert issubclass(cls, str), name
            assert e["members"][0][1] in cls and "no-such-value" not in cls  # raw values, as Apple's metaclass
        else:
            assert issubclass(cls, int), name
    assert not problems, "\n".join(problems)


def test_verification_status() -> None:
    from appstoreserver.signed_data_verifier import VerificationStatus

    assert [[m.name, m.value] for m in VerificationStatus] == SURFACE["verificationStatus"]


def test_api_error() -> None:
    from appstoreserver.api_client import APIError

    assert [[m.name, m.value] for m in APIError] == SURFACE["apiError"]


def _check_params(where: str, sig: inspect.Signature, apple: list) -> None:
    params = [p for p in sig.parameters.values() if p.name != "self"]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = {p.name: p for p in params}
    apple_positional = [n for n, kind in apple if kind != "kw"]
    assert [p.name for p in positional[: len(apple_positional)]] == apple_positional, \
        f"{where}: positional parameters {[p.name for p in positional]} != Apple's {apple_positional}"
    for n, kind in apple:
        assert n in names, f"{where}: no parameter {n}"
        p = names[n]
        if kind == "kw":
            assert p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD), f"{where}.{n} must be accepted by keyword"
        if kind in ("default", "kw"):
            assert p.default is not inspect.Parameter.empty, f"{where}.{n} must have a default (Apple's has one)"
    # Anything beyond Apple's must be optional, so that Apple's calls still bind.
    for p in params:
        if p.name not in dict(apple):
            assert p.default is not inspect.Parameter.empty or p.kind == p.VAR_KEYWORD, f"{where}: extra {p.name}"


def test_model_constructors() -> None:
    for name, params in SURFACE["modelInits"].items():
        module = name
        cls: Any = getattr(importlib.import_module(f"appstoreserver.models.{module}"), name)
        _check_params(name, inspect.signature(cls.__init__), params)


@pytest.mark.parametrize("cls_name", ["AppStoreServerAPIClient", "AsyncAppStoreServerAPIClient"])
def test_client_methods(cls_name: str) -> None:
    from appstoreserver import api_client

    cls = getattr(api_client, cls_name)
    _check_params(f"{cls_name}.__init__", inspect.signature(cls.__init__),
                  [["signing_key", "required"], ["key_id", "required"], ["issuer_id", "required"],
                   ["bundle_id", "required"], ["environment", "required"]])
    for method, params in SURFACE["clientMethods"].items():
        fn = getattr(cls, method)
        assert inspect.iscoroutinefunction(fn) == (cls_name == "AsyncAppStoreServerAPIClient"), method
        _check_params(f"{cls_name}.{method}", inspect.signature(fn), params)
    hook = inspect.signature(cls._execute_request)
    assert list(hook.parameters) == ["self", "method", "url", "params", "headers", "json", "data"]
    assert hasattr(cls, "_generate_token")
    if cls_name == "AsyncAppStoreServerAPIClient":
        assert inspect.iscoroutinefunction(cls.async_close)


def test_other_constructors_and_methods() -> None:
    from appstoreserver import jws_signature_creator as j
    from appstoreserver.promotional_offer import PromotionalOfferSignatureCreator
    from appstoreserver.receipt_utility import ReceiptUtility
    from appstoreserver.signed_data_verifier import SignedDataVerifier

    r, d = "required", "default"
    _check_params("SignedDataVerifier", inspect.signature(SignedDataVerifier.__init__),
                  [["root_certificates", r], ["enable_online_checks", r], ["environment", r], ["bundle_id", r],
                   ["app_apple_id", d]])
    for m, arg in [("verify_and_decode_renewal_info", "signed_renewal_info"),
                   ("verify_and_decode_signed_transaction", "signed_transaction"),
                   ("verify_and_decode_notification", "signed_payload"),
                   ("verify_and_decode_app_transaction", "signed_app_transaction"),
                   ("verify_and_decode_realtime_request", "signed_payload")]:
        _check_params(m, inspect.signature(getattr(SignedDataVerifier, m)), [[arg, r]])
    _check_params("PromotionalOfferSignatureCreator", inspect.signature(PromotionalOfferSignatureCreator.__init__),
                  [["signing_key", r], ["key_id", r], ["bundle_id", r]])
    _check_params("PromotionalOfferSignatureCreator.create_signature",
                  inspect.signature(PromotionalOfferSignatureCreator.create_signature),
                  [["product_identifier", r], ["subscription_offer_id", r], ["application_username", r], ["nonce", r],
                   ["timestamp", r]])
    four = [["signing_key", r], ["key_id", r], ["issuer_id", r], ["bundle_id", r]]
    _check_params("JWSSignatureCreator", inspect.signature(j.JWSSignatureCreator.__init__), [["audience", r]] + four)
    for cls, params in [(j.PromotionalOfferV2SignatureCreator,
                         [["product_id", r], ["offer_identifier", r], ["transaction_id", r]]),
                        (j.IntroductoryOfferEligibilitySignatureCreator,
                         [["product_id", r], ["allow_introductory_offer", r], ["transaction_id", r]]),
                        (j.AdvancedCommerceAPIInAppSignatureCreator, [["advanced_commerce_in_app_request", r]])]:
        _check_params(cls.__name__, inspect.signature(cls.__init__), four)
        _check_params(cls.__name__ + ".create_signature", inspect.signature(cls.create_signature), params)
    for m in ("extract_transaction_id_from_app_receipt", "extract_transaction_id_from_transaction_receipt"):
        assert callable(getattr(ReceiptUtility(), m))


def _hook(path: str) -> Any:
    module, cls, name = path.rsplit(".", 2)
    return getattr(getattr(importlib.import_module(f"appstoreserver.{module}"), cls), name, None)


@pytest.mark.parametrize("path,spec", SURFACE["hooks"]["offered"].items())
def test_underscore_hooks(path: str, spec: list) -> None:
    """Apple's underscore extension points its tests override (_execute_request, _verify_notification, ...): here,
    with Apple's parameters, sync or async as Apple's."""
    fn = _hook(path)
    assert callable(fn), f"{path} is missing"
    params, is_async = spec
    assert list(inspect.signature(fn).parameters) == params, path
    assert inspect.iscoroutinefunction(fn) == is_async, path


def test_underscore_hooks_not_offered_are_listed_truthfully() -> None:
    """Each hook listed as not offered is absent, or present only to refuse (NotImplementedError)."""
    for path, reason in SURFACE["hooks"]["notOffered"].items():
        fn = _hook(path)
        assert fn is None or "NotImplementedError" in reason, f"{path} exists now: move it to hooks.offered"
