"""The Advanced Commerce request models check what Apple's Python models check (appstoreserverlibrary 3.1,
HelperValidationUtils and the attrs validators of each model), when they are built and when a checked field is
assigned, with Apple's error type (ValueError) and messages. The table below is written from Apple's source: which
model checks which field, and Apple's limits."""

from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, List, Tuple

import pytest

from appstoreserver.models.AdvancedCommerceDescriptors import AdvancedCommerceDescriptors
from appstoreserver.models.AdvancedCommerceEffective import AdvancedCommerceEffective
from appstoreserver.models.AdvancedCommerceOffer import AdvancedCommerceOffer
from appstoreserver.models.AdvancedCommerceOfferPeriod import AdvancedCommerceOfferPeriod
from appstoreserver.models.AdvancedCommerceOfferReason import AdvancedCommerceOfferReason
from appstoreserver.models.AdvancedCommerceOneTimeChargeItem import AdvancedCommerceOneTimeChargeItem
from appstoreserver.models.AdvancedCommercePeriod import AdvancedCommercePeriod
from appstoreserver.models.AdvancedCommerceReason import AdvancedCommerceReason
from appstoreserver.models.AdvancedCommerceRefundReason import AdvancedCommerceRefundReason
from appstoreserver.models.AdvancedCommerceRefundType import AdvancedCommerceRefundType
from appstoreserver.models.AdvancedCommerceRequestInfo import AdvancedCommerceRequestInfo
from appstoreserver.models.AdvancedCommerceRequestRefundItem import AdvancedCommerceRequestRefundItem
from appstoreserver.models.AdvancedCommerceRequestRefundRequest import AdvancedCommerceRequestRefundRequest
from appstoreserver.models.AdvancedCommerceSubscriptionChangeMetadataDescriptors import (
    AdvancedCommerceSubscriptionChangeMetadataDescriptors,
)
from appstoreserver.models.AdvancedCommerceSubscriptionChangeMetadataItem import (
    AdvancedCommerceSubscriptionChangeMetadataItem,
)
from appstoreserver.models.AdvancedCommerceSubscriptionChangeMetadataRequest import (
    AdvancedCommerceSubscriptionChangeMetadataRequest,
)
from appstoreserver.models.AdvancedCommerceSubscriptionCreateItem import AdvancedCommerceSubscriptionCreateItem
from appstoreserver.models.AdvancedCommerceSubscriptionCreateRequest import AdvancedCommerceSubscriptionCreateRequest
from appstoreserver.models.AdvancedCommerceSubscriptionMigrateDescriptors import (
    AdvancedCommerceSubscriptionMigrateDescriptors,
)
from appstoreserver.models.AdvancedCommerceSubscriptionMigrateItem import AdvancedCommerceSubscriptionMigrateItem
from appstoreserver.models.AdvancedCommerceSubscriptionMigrateRenewalItem import (
    AdvancedCommerceSubscriptionMigrateRenewalItem,
)
from appstoreserver.models.AdvancedCommerceSubscriptionMigrateRequest import AdvancedCommerceSubscriptionMigrateRequest
from appstoreserver.models.AdvancedCommerceSubscriptionModifyAddItem import AdvancedCommerceSubscriptionModifyAddItem
from appstoreserver.models.AdvancedCommerceSubscriptionModifyChangeItem import (
    AdvancedCommerceSubscriptionModifyChangeItem,
)
from appstoreserver.models.AdvancedCommerceSubscriptionModifyDescriptors import (
    AdvancedCommerceSubscriptionModifyDescriptors,
)
from appstoreserver.models.AdvancedCommerceSubscriptionModifyInAppRequest import (
    AdvancedCommerceSubscriptionModifyInAppRequest,
)
from appstoreserver.models.AdvancedCommerceSubscriptionModifyPeriodChange import (
    AdvancedCommerceSubscriptionModifyPeriodChange,
)
from appstoreserver.models.AdvancedCommerceSubscriptionModifyRemoveItem import (
    AdvancedCommerceSubscriptionModifyRemoveItem,
)
from appstoreserver.models.AdvancedCommerceSubscriptionPriceChangeItem import AdvancedCommerceSubscriptionPriceChangeItem
from appstoreserver.models.AdvancedCommerceSubscriptionPriceChangeRequest import (
    AdvancedCommerceSubscriptionPriceChangeRequest,
)
from appstoreserver.models.AdvancedCommerceSubscriptionReactivateInAppRequest import (
    AdvancedCommerceSubscriptionReactivateInAppRequest,
)
from appstoreserver.models.AdvancedCommerceSubscriptionReactivateItem import AdvancedCommerceSubscriptionReactivateItem
from appstoreserver.models.AdvancedCommerceSubscriptionRevokeRequest import AdvancedCommerceSubscriptionRevokeRequest
from appstoreserver.models.BulletPoint import BulletPoint
from appstoreserver.models.HelperValidationUtils import HelperValidationUtils

INFO = AdvancedCommerceRequestInfo(uuid.UUID("3e9c1f5b-5a4e-4f0a-9c2e-1d7c1f2b6a11"))
NOW, NEXT = AdvancedCommerceEffective.IMMEDIATELY, AdvancedCommerceEffective.NEXT_BILL_CYCLE


def _refund_item() -> Any:
    return AdvancedCommerceRequestRefundItem("sku", False, AdvancedCommerceRefundReason.UNINTENDED_PURCHASE,
                                             AdvancedCommerceRefundType.FULL)


def _migrate_item() -> Any:
    return AdvancedCommerceSubscriptionMigrateItem("sku", "d", "n")


def _change_item() -> Any:
    return AdvancedCommerceSubscriptionModifyChangeItem("sku", "d", "n", "old", 1, AdvancedCommerceReason.UPGRADE, NOW)


# class: keyword arguments of a valid instance (Apple's attribute names)
VALID: Dict[Any, Callable[[], Dict[str, Any]]] = {
    AdvancedCommerceDescriptors: lambda: dict(description="d", displayName="n"),
    AdvancedCommerceSubscriptionMigrateDescriptors: lambda: dict(description="d", displayName="n"),
    AdvancedCommerceOffer: lambda: dict(periodCount=3, price=1, period=AdvancedCommerceOfferPeriod.P1W,
                                        reason=AdvancedCommerceOfferReason.ACQUISITION),
    AdvancedCommerceOneTimeChargeItem: lambda: dict(SKU="sku", description="d", displayName="n", price=1),
    AdvancedCommerceRequestRefundItem: lambda: dict(SKU="sku", revoke=False,
                                                    refundReason=AdvancedCommerceRefundReason.UNINTENDED_PURCHASE,
                                                    refundType=AdvancedCommerceRefundType.FULL),
    AdvancedCommerceRequestRefundRequest: lambda: dict(requestInfo=INFO, items=[_refund_item()],
                                                       refundRiskingPreference=False),
    AdvancedCommerceSubscriptionChangeMetadataDescriptors: lambda: dict(effective=NEXT, description="d",
                                                                        displayName="n"),
    AdvancedCommerceSubscriptionChangeMetadataItem: lambda: dict(currentSKU="old", effective=NOW, description="d",
                                                                 displayName="n", SKU="sku"),
    AdvancedCommerceSubscriptionChangeMetadataRequest: lambda: dict(
        requestInfo=INFO, items=[AdvancedCommerceSubscriptionChangeMetadataItem("old", NOW)]),
    AdvancedCommerceSubscriptionCreateItem: lambda: dict(SKU="sku", description="d", displayName="n", price=1),
    AdvancedCommerceSubscriptionMigrateItem: lambda: dict(SKU="sku", description="d", displayName="n"),
    AdvancedCommerceSubscriptionMigrateRenewalItem: lambda: dict(SKU="sku", description="d", displayName="n"),
    AdvancedCommerceSubscriptionMigrateRequest: lambda: dict(
        requestInfo=INFO, descriptors=AdvancedCommerceSubscriptionMigrateDescriptors("d", "n"), items=[_migrate_item()],
        targetProductId="p", taxCode="C003-00-1"),
    AdvancedCommerceSubscriptionModifyAddItem: lambda: dict(SKU="sku", description="d", displayName="n", price=1),
    AdvancedCommerceSubscriptionModifyChangeItem: lambda: dict(SKU="sku", description="d", displayName="n",
                                                               currentSKU="old", price=1,
                                                               reason=AdvancedCommerceReason.UPGRADE, effective=NOW),
    AdvancedCommerceSubscriptionModifyDescriptors: lambda: dict(effective=NOW, description="d", displayName="n"),
    AdvancedCommerceSubscriptionModifyInAppRequest: lambda: dict(requestInfo=INFO, transactionId="1",
                                                                 retainBillingCycle=True),
    AdvancedCommerceSubscriptionModifyRemoveItem: lambda: dict(SKU="sku"),
    AdvancedCommerceSubscriptionPriceChangeItem: lambda: dict(SKU="sku", price=1),
    AdvancedCommerceSubscriptionReactivateItem: lambda: dict(SKU="sku"),
}

SKU = "SKU length cannot exceed 128 characters"
DESCRIPTION = "Description length cannot exceed 45 characters"
DISPLAY_NAME = "Display name length cannot exceed 30 characters"
PERIOD = "Period count must be between 1 and 12"
EMPTY = "Items list cannot be empty"


def _strings(field: str, limit: int, message: str) -> Tuple[str, List[Any], List[Tuple[Any, str]]]:
    return field, ["x" * limit, ""], [("x" * (limit + 1), message), ("é" * (limit + 1), message)]


def _items(field: str, item: Callable[[], Any], required: bool) -> Tuple[str, List[Any], List[Tuple[Any, str]]]:
    ok: List[Any] = [[item()], [item(), item()]] + ([] if required else [None])
    bad: List[Tuple[Any, str]] = [([], EMPTY), ([None], "Item at index 0 in the list cannot be None"),
                                  ([item(), None], "Item at index 1 in the list cannot be None")]
    return field, ok, bad + ([(None, EMPTY)] if required else [])


_DESCRIBED = [_strings("description", 45, DESCRIPTION), _strings("displayName", 30, DISPLAY_NAME)]
_ITEM = [_strings("SKU", 128, SKU)] + _DESCRIBED  # Apple's AbstractAdvancedCommerceItem

# Apple's validators: class, (field, values accepted, (value, message) refused)
CHECKS: List[Tuple[Any, Tuple[str, List[Any], List[Tuple[Any, str]]]]] = [
    *[(AdvancedCommerceDescriptors, c) for c in _DESCRIBED],
    *[(AdvancedCommerceSubscriptionMigrateDescriptors, c) for c in _DESCRIBED],
    *[(AdvancedCommerceSubscriptionChangeMetadataDescriptors, c) for c in _DESCRIBED],
    *[(AdvancedCommerceSubscriptionModifyDescriptors, c) for c in _DESCRIBED],
    (AdvancedCommerceOffer, ("periodCount", [1, 12], [(0, PERIOD), (13, PERIOD), (-1, PERIOD)])),
    *[(cls, c) for cls in (AdvancedCommerceOneTimeChargeItem, AdvancedCommerceSubscriptionCreateItem,
                           AdvancedCommerceSubscriptionMigrateItem, AdvancedCommerceSubscriptionMigrateRenewalItem,
                           AdvancedCommerceSubscriptionModifyAddItem, AdvancedCommerceSubscriptionModifyChangeItem)
      for c in _ITEM],
    (AdvancedCommerceSubscriptionModifyChangeItem, _strings("currentSKU", 128, SKU)),
    *[(AdvancedCommerceSubscriptionChangeMetadataItem, c)
      for c in [_strings("currentSKU", 128, SKU), _strings("SKU", 128, SKU)] + _DESCRIBED],
    *[(cls, _strings("SKU", 128, SKU)) for cls in (
        AdvancedCommerceRequestRefundItem, AdvancedCommerceSubscriptionModifyRemoveItem,
        AdvancedCommerceSubscriptionPriceChangeItem, AdvancedCommerceSubscriptionReactivateItem)],
    (AdvancedCommerceSubscriptionPriceChangeItem, ("dependentSKUs", [None, [], ["x" * 128, "y"]],
                                                   [(["y", "x" * 129], SKU)])),
    (AdvancedCommerceRequestRefundRequest, _items("items", _refund_item, True)),
    (AdvancedCommerceSubscriptionChangeMetadataRequest, _items(
        "items", lambda: AdvancedCommerceSubscriptionChangeMetadataItem("old", NOW), False)),
    (AdvancedCommerceSubscriptionMigrateRequest, _items("items", _migrate_item, True)),
    (AdvancedCommerceSubscriptionMigrateRequest, _items(
        "renewalItems", lambda: AdvancedCommerceSubscriptionMigrateRenewalItem("sku", "d", "n"), False)),
    (AdvancedCommerceSubscriptionModifyInAppRequest, _items(
        "addItems", lambda: AdvancedCommerceSubscriptionModifyAddItem("sku", "d", "n", 1), False)),
    (AdvancedCommerceSubscriptionModifyInAppRequest, _items("changeItems", _change_item, False)),
]


def _id(case: Any) -> str:
    cls, (field, _, _) = case
    return f"{cls.__name__.replace('AdvancedCommerce', '')}.{field}"


@pytest.mark.parametrize("case", CHECKS, ids=[_id(c) for c in CHECKS])
def test_checked_when_built(case: Any) -> None:
    cls, (field, accepted, refused) = case
    for value in accepted:
        assert getattr(cls(**dict(VALID[cls](), **{field: value})), field) == value
    for value, message in refused:
        with pytest.raises(ValueError) as ei:
            cls(**dict(VALID[cls](), **{field: value}))
        assert str(ei.value) == message, (field, value)


@pytest.mark.parametrize("case", CHECKS, ids=[_id(c) for c in CHECKS])
def test_checked_when_assigned(case: Any) -> None:
    """attrs' @define validates an assignment too; the refused value is not kept."""
    cls, (field, accepted, refused) = case
    model = cls(**VALID[cls]())
    before = getattr(model, field)
    for value, message in refused:
        with pytest.raises(ValueError, match=f"^{message}$"):
            setattr(model, field, value)
        assert getattr(model, field) == before
    for value in accepted:
        setattr(model, field, value)
        assert getattr(model, field) == value


def test_every_checked_model_is_in_the_table() -> None:
    """The models carrying checks are the ones Apple's validators cover (and no other model checks at construction:
    e.g. BulletPoint's 66 characters are checked by the library when the request is sent)."""
    import importlib
    import pkgutil

    import appstoreserver.models as models

    checked = set()
    for mod in pkgutil.iter_modules(models.__path__):
        cls = getattr(importlib.import_module(f"appstoreserver.models.{mod.name}"), mod.name, None)
        for field in getattr(cls, "_CHECKS", {}) or {}:
            checked.add((cls.__name__, field))
    assert checked == {(cls.__name__, field) for cls, (field, _, _) in CHECKS}


def test_not_checked_where_apple_does_not() -> None:
    """Apple's models without a validator build with any value; the library checks the request when it is sent or
    signed (its limits of spec/models.json)."""
    AdvancedCommerceSubscriptionPriceChangeRequest(INFO, [])
    AdvancedCommerceSubscriptionReactivateInAppRequest(INFO, "1", [])
    AdvancedCommerceSubscriptionModifyInAppRequest(INFO, "1", True, removeItems=[])
    AdvancedCommerceSubscriptionCreateRequest(INFO, "USD", AdvancedCommerceDescriptors("d", "n"), [], "C003-00-1",
                                              AdvancedCommercePeriod.P1M)
    BulletPoint("x" * 67, "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d", "y" * 151)


def test_decoding_does_not_check() -> None:
    """from_dict takes what it is given (it decodes Apple's answers and payloads); the library refuses a request
    beyond the limits when it is sent or signed."""
    item = AdvancedCommerceOneTimeChargeItem.from_dict({"SKU": "s" * 200, "description": "d", "displayName": "n",
                                                        "price": 1})
    assert item.SKU == "s" * 200


@pytest.mark.parametrize("build,message", [
    (lambda: AdvancedCommerceOffer(1, 50, None, AdvancedCommerceOfferReason.ACQUISITION),
     "Either period or rawPeriod must be provided"),
    (lambda: AdvancedCommerceOffer(1, 50, AdvancedCommerceOfferPeriod.P1W), "Either reason or rawReason must be provided"),
    (lambda: AdvancedCommerceRequestRefundItem("s", False, None, AdvancedCommerceRefundType.FULL),
     "Either refundReason or rawRefundReason must be provided"),
    (lambda: AdvancedCommerceRequestRefundItem("s", False, AdvancedCommerceRefundReason.UNINTENDED_PURCHASE),
     "Either refundType or rawRefundType must be provided"),
    (lambda: AdvancedCommerceSubscriptionChangeMetadataDescriptors(), "Either effective or rawEffective must be provided"),
    (lambda: AdvancedCommerceSubscriptionChangeMetadataItem("old"), "Either effective or rawEffective must be provided"),
    (lambda: AdvancedCommerceSubscriptionCreateRequest(INFO, "USD", AdvancedCommerceDescriptors("d", "n"), [], "C"),
     "Either period or rawPeriod must be provided"),
    (lambda: AdvancedCommerceSubscriptionModifyChangeItem("s", "d", "n", "old", 1, None, NOW),
     "Either reason or rawReason must be provided"),
    (lambda: AdvancedCommerceSubscriptionModifyChangeItem("s", "d", "n", "old", 1, AdvancedCommerceReason.UPGRADE),
     "Either effective or rawEffective must be provided"),
    (lambda: AdvancedCommerceSubscriptionModifyDescriptors(), "Either effective or rawEffective must be provided"),
    (lambda: AdvancedCommerceSubscriptionModifyPeriodChange(), "Either effective or rawEffective must be provided"),
    (lambda: AdvancedCommerceSubscriptionModifyPeriodChange(NOW), "Either period or rawPeriod must be provided"),
    (lambda: AdvancedCommerceSubscriptionRevokeRequest(INFO, True, None, AdvancedCommerceRefundReason.UNINTENDED_PURCHASE),
     "Either refundType or rawRefundType must be provided"),
    (lambda: AdvancedCommerceSubscriptionRevokeRequest(INFO, True, AdvancedCommerceRefundType.FULL),
     "Either refundReason or rawRefundReason must be provided"),
])
def test_required_enums(build: Callable[[], Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        build()


def test_required_enum_comes_before_the_validators() -> None:
    """attrs assigns every field (a required raw twin's factory raises) before it runs the validators."""
    with pytest.raises(ValueError, match="^Either effective or rawEffective must be provided$"):
        AdvancedCommerceSubscriptionModifyDescriptors(None, "d" * 46)


def test_helper_validation_utils() -> None:
    """Apple's HelperValidationUtils: the same limits (spec/models.json's) and messages, for code that calls it."""
    h = HelperValidationUtils
    assert (h.MAXIMUM_DESCRIPTION_LENGTH, h.MAXIMUM_DISPLAY_NAME_LENGTH, h.MAXIMUM_SKU_LENGTH, h.MIN_PERIOD,
            h.MAX_PERIOD) == (45, 30, 128, 1, 12)
    for call, message in [(lambda: h.description_validator(None, None, "d" * 46), DESCRIPTION),
                          (lambda: h.display_name_validator(None, None, "n" * 31), DISPLAY_NAME),
                          (lambda: h.sku_validator(None, None, "s" * 129), SKU),
                          (lambda: h.period_count_validator(None, None, 13), PERIOD),
                          (lambda: h.items_validator(None, None, []), EMPTY),
                          (lambda: h.items_validator(None, None, [1, None]), "Item at index 1 in the list cannot be None"),
                          (lambda: h.dependent_skus_validator(None, None, ["s" * 129]), SKU)]:
        with pytest.raises(ValueError, match=f"^{message}$"):
            call()
    h.description_validator(None, None, "d" * 45)
    h.period_count_validator(None, None, 12)
