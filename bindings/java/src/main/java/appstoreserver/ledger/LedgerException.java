package appstoreserver.ledger;

import appstoreserver.AppStoreServerException;

/**
 * The ledger cannot be opened or written: a database of a newer schema, or of another app or environment than the
 * verifier's (getStatus() CONFIGURATION_ERROR, getReason() LEDGER_IDENTITY_MISMATCH), PostgreSQL without libpq
 * (CONFIGURATION_ERROR), or the database failed (STORAGE_ERROR / STORAGE_FAILED, with the database's own message: an
 * I/O error, a full disk, a corrupt file, a server that cannot be reached). Nothing was acknowledged: give the value
 * again later. Unchecked, like the binding's other library failures ({@link AppStoreServerException}).
 */
public class LedgerException extends AppStoreServerException {
    private static final long serialVersionUID = 1L;

    public LedgerException(int status, int reason, String message) {
        super(status, reason, message, null);
    }
}
