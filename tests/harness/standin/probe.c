/*
 * A PROBE stand-in for the bootstrap's own mechanisms, built only for
 * bundler's tests (tests/wine/test_bootstrap_mechanisms.py). Not NVIDIA code.
 *
 * Static imports of bundled DLLs resolve whatever the bootstrap does: the
 * loader finds them beside the DLL (LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR) or
 * already loaded. What each mechanism guarantees shows only with a library
 * that loads another one *while it is being loaded* (in DllMain, as some
 * libraries do at initialisation), or that imports a DLL which is not bundled:
 *
 *   STANDIN_ATTACH_LOAD   a DLL name (string) DllMain loads on process attach;
 *   STANDIN_ATTACH_FLAGS  if defined, it is loaded with LoadLibraryExA and
 *                         these flags (0x1000 = LOAD_LIBRARY_SEARCH_DEFAULT_DIRS,
 *                         which honours os.add_dll_directory folders); else with
 *                         a plain LoadLibraryA (standard search: PATH, not
 *                         add_dll_directory folders, but any module already
 *                         loaded under that name);
 *   STANDIN_PROBE_ID      what probe_id() returns (the bundled copy and a
 *                         decoy on PATH differ);
 *   STANDIN_EXPORT_NVML   defined to also export nvmlInit_v2 (a stand-in
 *                         nvml.dll, the driver DLL gamma.dll imports).
 *
 * probe_attach_path() gives the path of the module DllMain got, "" if none:
 * the test reads which copy a load made during the bootstrap's preload found.
 */
#define STANDIN_OWN_DLLMAIN
#include "standin.h"

#ifndef STANDIN_PROBE_ID
#error "define STANDIN_PROBE_ID"
#endif

__declspec(dllimport) HMODULE WINAPI LoadLibraryExA(const char *name, void *file, DWORD flags);

static char attach_path[1024];

STANDIN_EXPORT int probe_id(void)
{
    return STANDIN_PROBE_ID;
}

#ifdef STANDIN_EXPORT_NVML
STANDIN_EXPORT int nvmlInit_v2(void)
{
    return 0;
}
#endif

STANDIN_EXPORT int probe_attach_path(char *buf, int n)
{
    int i;

    if (buf == NULL || n <= 0)
        return -1;
    for (i = 0; i < n - 1 && attach_path[i]; i++)
        buf[i] = attach_path[i];
    buf[i] = '\0';
    return i;
}

BOOL WINAPI DllMainCRTStartup(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
    (void)inst;
    (void)reserved;
#ifdef STANDIN_ATTACH_LOAD
    if (reason == 1) { /* DLL_PROCESS_ATTACH */
        HMODULE got;
#ifdef STANDIN_ATTACH_FLAGS
        got = LoadLibraryExA(STANDIN_ATTACH_LOAD, NULL, STANDIN_ATTACH_FLAGS);
#else
        got = LoadLibraryA(STANDIN_ATTACH_LOAD);
#endif
        if (got != NULL)
            GetModuleFileNameA(got, attach_path, sizeof(attach_path));
    }
#else
    (void)reason;
#endif
    return TRUE;
}
