#ifndef IPND_CSQLITESETUP_SHIM_H
#define IPND_CSQLITESETUP_SHIM_H
#include <sqlite3.h>

/* sqlite3_config is variadic, which Swift cannot call: these wrap the two settings ipnd makes
   before SQLite starts. Each returns SQLITE_OK, or SQLITE_MISUSE once SQLite has started. */

/* Connections without a mutex of their own (SQLITE_OPEN_NOMUTEX by default): GRDB already
   serialises every use of a connection. */
static inline int ipnd_sqlite_config_multithread(void) {
    return sqlite3_config(SQLITE_CONFIG_MULTITHREAD);
}

/* No memory statistics: with them on, every SQLite allocation takes a process-wide mutex. */
static inline int ipnd_sqlite_config_no_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
