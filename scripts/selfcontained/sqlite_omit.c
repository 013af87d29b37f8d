/* SQLite extensions the purchase ledger does not use, left out of the self-contained library (CMakeLists.txt).
 *
 * Debian's libsqlite3.a is built from SQLite's separate source files with FTS3/4, FTS5, R*Tree, JSON, dbstat and
 * sqlite_stmt enabled; sqlite3_open registers each through the functions below, so each archive member (about
 * 0.4 MB of code and unwind tables in all) would be linked in although the ledger's SQL uses none of them. Defining
 * the registration functions here, before libsqlite3.a on the link line, keeps those members out: the SQL functions
 * and virtual tables they provide do not exist in this library (as with SQLITE_OMIT_JSON and friends), and
 * everything else is SQLite's own code. The system-linked flavour uses the system's libsqlite3 unchanged.
 * The bindings' ledger tests run on this library. */
typedef struct sqlite3 sqlite3;

#define OMITTED(name) int name(sqlite3 *db) { (void)db; return 0; /* SQLITE_OK: nothing registered */ }
OMITTED(sqlite3Fts3Init)
OMITTED(sqlite3Fts5Init)
OMITTED(sqlite3RtreeInit)
OMITTED(sqlite3DbstatRegister)
OMITTED(sqlite3StmtVtabInit)
OMITTED(sqlite3JsonTableFunctions)
/* The JSON scalar functions (json(), json_extract(), ...), registered with the built-in functions. */
void sqlite3RegisterJsonFunctions(void) {}
/* The date and time functions (date(), strftime(), julianday(), CURRENT_TIMESTAMP, ...; SQLITE_OMIT_DATETIME_FUNCS):
 * the ledger stores milliseconds and computes with them, never with SQLite's dates. 11 KB. */
void sqlite3RegisterDateTimeFunctions(void) {}
/* The memdb VFS (sqlite3_serialize, sqlite3_deserialize, "file:...?vfs=memdb"; SQLITE_OMIT_DESERIALIZE): registered
 * when SQLite initializes and listed in the table of routines for loadable extensions, which this library never
 * loads; the ledger's "sqlite::memory:" is SQLite's own in-memory database, not memdb. 5 KB. */
int sqlite3MemdbInit(void) { return 0; /* SQLITE_OK */ }
unsigned char *sqlite3_serialize(sqlite3 *db, const char *schema, long long *size, unsigned flags) {
    (void)db; (void)schema; (void)flags;
    if (size) *size = -1;
    return 0; /* NULL: "cannot serialize", as SQLite answers on failure */
}
int sqlite3_deserialize(sqlite3 *db, const char *schema, unsigned char *data, long long size, long long capacity,
                        unsigned flags) {
    (void)db; (void)schema; (void)data; (void)size; (void)capacity; (void)flags;
    return 1; /* SQLITE_ERROR */
}
/* Loadable extensions (SQLITE_OMIT_LOAD_EXTENSION): the library never enables them, so load_extension() answers "not
 * authorized" before it would get here. Keeping loadext.o out also drops its table of every SQLite routine (what a
 * loaded extension calls), which kept each of them linked in whether the ledger calls it or not. These are the four
 * symbols SQLite's other members take from loadext.o; nothing is ever registered, so there is nothing to close. */
char *sqlite3_mprintf(const char *format, ...);
void sqlite3AutoLoadExtensions(sqlite3 *db) { (void)db; }
void sqlite3CloseExtensions(sqlite3 *db) { (void)db; }
void sqlite3_reset_auto_extension(void) {}
int sqlite3_load_extension(sqlite3 *db, const char *file, const char *entry, char **error) {
    (void)db; (void)file; (void)entry;
    if (error) *error = sqlite3_mprintf("loadable extensions are not in this library");
    return 1; /* SQLITE_ERROR */
}
