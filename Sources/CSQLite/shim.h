/* SQLite for Swift (the purchase ledger's embedded storage), plus what Swift cannot import from it. */
#ifndef APPSTORE_CSQLITE_SHIM_H
#define APPSTORE_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro: SQLite copies the bytes before the call returns. */
static inline int appstore_sqlite3_bind_text(sqlite3_stmt *s, int i, const char *text, int n) {
  return sqlite3_bind_text(s, i, text, n, SQLITE_TRANSIENT);
}
#endif
