# Apple's README "Promotional Offer Signature Creation" and the JWS signature creators; only the import prefix
# differs from Apple's library (appstoreserverlibrary -> appstoreserver). Type-checked by test_typing.py, never run.
import time
import uuid

from appstoreserver.jws_signature_creator import (
    AdvancedCommerceAPIInAppSignatureCreator,
    IntroductoryOfferEligibilitySignatureCreator,
    PromotionalOfferV2SignatureCreator,
)
from appstoreserver.models.AdvancedCommerceOneTimeChargeCreateRequest import AdvancedCommerceOneTimeChargeCreateRequest
from appstoreserver.models.AdvancedCommerceOneTimeChargeItem import AdvancedCommerceOneTimeChargeItem
from appstoreserver.models.AdvancedCommerceRequestInfo import AdvancedCommerceRequestInfo
from appstoreserver.promotional_offer import PromotionalOfferSignatureCreator


def read_private_key(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


private_key = read_private_key("/path/to/key/SubscriptionKey_ABCDEFGHIJ.p8")  # Implementation will vary

key_id = "ABCDEFGHIJ"
issuer_id = "99b16628-15e4-4668-972b-eeff55eeff55"
bundle_id = "com.example"

promotion_code_signature_generator = PromotionalOfferSignatureCreator(private_key, key_id, bundle_id)

product_id = "<product_id>"
subscription_offer_id = "<subscription_offer_id>"
application_username = "<application_username>"
nonce = "<nonce>"
timestamp = round(time.time() * 1000)
base64_encoded_signature: str = promotion_code_signature_generator.create_signature(
    product_id, subscription_offer_id, application_username, nonce, timestamp)

v2 = PromotionalOfferV2SignatureCreator(private_key, key_id, issuer_id, bundle_id)
offer_jws: str = v2.create_signature(product_id, "offer", None)

eligibility = IntroductoryOfferEligibilitySignatureCreator(private_key, key_id, issuer_id, bundle_id)
eligibility_jws: str = eligibility.create_signature(product_id, True, "1234")

item = AdvancedCommerceOneTimeChargeItem(SKU="sku.1", description="A thing", displayName="Thing", price=990)
request = AdvancedCommerceOneTimeChargeCreateRequest(
    requestInfo=AdvancedCommerceRequestInfo(requestReferenceId=uuid.uuid4()),
    currency="USD", item=item, taxCode="C003-00-2")
sku: str = request.item.SKU
advanced_commerce = AdvancedCommerceAPIInAppSignatureCreator(private_key, key_id, issuer_id, bundle_id)
in_app_jws: str = advanced_commerce.create_signature(request)
print(base64_encoded_signature, offer_jws, eligibility_jws, sku, in_app_jws)
