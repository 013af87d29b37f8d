# Apple's AsyncAppStoreServerAPIClient as Apple's async tests use it, with typed answers; only the import prefix
# differs from Apple's library (appstoreserverlibrary -> appstoreserver). Type-checked by test_typing.py, never run.
import asyncio
from typing import Optional

from appstoreserver.api_client import APIException, AsyncAppStoreServerAPIClient
from appstoreserver.models.Environment import Environment
from appstoreserver.models.TransactionInfoResponse import TransactionInfoResponse


async def main(private_key: bytes) -> Optional[str]:
    client = AsyncAppStoreServerAPIClient(private_key, "ABCDEFGHIJ", "99b16628-15e4-4668-972b-eeff55eeff55",
                                          "com.example", Environment.SANDBOX)
    try:
        response: TransactionInfoResponse = await client.get_transaction_info("1234")
        statuses = await client.get_all_subscription_statuses("1234")
        print(statuses.bundleId, statuses.environment)
        return response.signedTransactionInfo
    except APIException as e:
        print(e.http_status_code, e.api_error)
        return None
    finally:
        await client.async_close()


print(asyncio.run(main(b"-----BEGIN PRIVATE KEY-----")))
