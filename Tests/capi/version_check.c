/*
 * version_check VERSION_FILE
 *
 * appstore_version() (the runtime library) == APPSTORE_VERSION_STRING (the header) == "MAJOR.MINOR.PATCH" built
 * from the APPSTORE_VERSION_* macros == the first line of the repository's VERSION file (whitespace trimmed).
 */
#include "capi_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

int main(int argc, char **argv) {
    capi_tally t = {"version", 0, 0};
    if (argc != 2) {
        fprintf(stderr, "usage: %s VERSION_FILE\n", argv[0]);
        return 2;
    }
    const char *runtime = appstore_version();
    capi_check(&t, runtime != NULL, "appstore_version() is not NULL", "got NULL");
    if (!runtime) return capi_finish(&t);
    printf("appstore_version()      = \"%s\"\n", runtime);
    printf("APPSTORE_VERSION_STRING = \"%s\"\n", APPSTORE_VERSION_STRING);

    capi_check(&t, strcmp(runtime, APPSTORE_VERSION_STRING) == 0, "appstore_version() == APPSTORE_VERSION_STRING",
               "\"%s\" != \"%s\"", runtime, APPSTORE_VERSION_STRING);

    char from_macros[64];
    snprintf(from_macros, sizeof from_macros, "%d.%d.%d", APPSTORE_VERSION_MAJOR, APPSTORE_VERSION_MINOR,
             APPSTORE_VERSION_PATCH);
    printf("MAJOR.MINOR.PATCH       = \"%s\"\n", from_macros);
    capi_check(&t, strcmp(from_macros, APPSTORE_VERSION_STRING) == 0,
               "APPSTORE_VERSION_STRING == MAJOR.MINOR.PATCH macros", "\"%s\" != \"%s\"", APPSTORE_VERSION_STRING,
               from_macros);
    /* The macros must be plain decimal literals (no expressions, no leading zeros) for that to be meaningful. */
    capi_check(&t, strcmp(STR(APPSTORE_VERSION_MAJOR) "." STR(APPSTORE_VERSION_MINOR) "." STR(APPSTORE_VERSION_PATCH),
                          from_macros) == 0,
               "version macros are plain decimal literals", "%s.%s.%s", STR(APPSTORE_VERSION_MAJOR),
               STR(APPSTORE_VERSION_MINOR), STR(APPSTORE_VERSION_PATCH));

    size_t len = 0;
    char *file = capi_read_trimmed(argv[1], &len);
    if (!capi_check(&t, file != NULL, "VERSION file readable", "%s", argv[1])) return capi_finish(&t);
    char *nl = strpbrk(file, "\r\n"); /* first line only, like CMake's file(STRINGS ... LIMIT_COUNT 1) */
    if (nl) *nl = 0;
    printf("VERSION file            = \"%s\"\n", file);
    capi_check(&t, strcmp(file, runtime) == 0, "VERSION file == appstore_version()", "\"%s\" != \"%s\"", file, runtime);
    capi_check(&t, strcmp(file, APPSTORE_VERSION_STRING) == 0, "VERSION file == APPSTORE_VERSION_STRING",
               "\"%s\" != \"%s\"", file, APPSTORE_VERSION_STRING);

    /* Static storage: the same pointer every time, still intact. */
    capi_check(&t, appstore_version() == runtime && strcmp(appstore_version(), APPSTORE_VERSION_STRING) == 0,
               "appstore_version() returns the same static string on every call", NULL);
    free(file);
    return capi_finish(&t);
}
