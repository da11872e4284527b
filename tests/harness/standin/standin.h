/*
 * Shared definitions for the bundler test STAND-INS.
 *
 * Nothing in tests/harness/standin/ is NVIDIA code. These are tiny DLLs shaped like
 * NVIDIA's (same file names, exports, import graph and version resources) so
 * that bundler's tests can exercise real Windows loading under Wine without
 * shipping or downloading the real, very large libraries.
 *
 * Every stand-in is linked with -nostdlib so its import table holds exactly
 * what the test wants to see (the cuDNN shim must import only KERNEL32, like
 * the real cudnn64_8.dll) and no C runtime DLL sneaks in.
 */
#ifndef BUNDLER_STANDIN_H
#define BUNDLER_STANDIN_H

#include <stddef.h>

/*
 * The few Win32 declarations the stand-ins use, instead of <windows.h>:
 * parsing windows.h costs about a second per compile, which dominates a cold
 * build of a dozen DLLs on a 2-core machine. These match the SDK exactly.
 */
typedef int BOOL;
typedef unsigned long DWORD;
typedef void *HMODULE;
typedef void *HINSTANCE;
typedef void *LPVOID;
typedef int(__stdcall *FARPROC)(void);
#define WINAPI __stdcall
#define TRUE 1

__declspec(dllimport) HMODULE WINAPI LoadLibraryA(const char *name);
__declspec(dllimport) FARPROC WINAPI GetProcAddress(HMODULE module, const char *name);
__declspec(dllimport) DWORD WINAPI GetModuleFileNameA(HMODULE module, char *buf, DWORD n);

#define STANDIN_EXPORT __declspec(dllexport)
#define STANDIN_IMPORT __declspec(dllimport)

/* Status codes with the values the real cuDNN 8 headers give them. */
#define CUDNN_STATUS_SUCCESS 0
#define CUDNN_STATUS_NOT_INITIALIZED 1
#define CUDNN_STATUS_INTERNAL_ERROR 4
#define CUDNN_STATUS_VERSION_MISMATCH 14

/*
 * With -nostdlib there is no CRT start-up code, so the linker's default DLL
 * entry symbol must be provided here (one per DLL: include this header from
 * exactly one source file per DLL). A source that needs its own entry point
 * (probe.c) defines STANDIN_OWN_DLLMAIN first.
 */
#ifndef STANDIN_OWN_DLLMAIN
BOOL WINAPI DllMainCRTStartup(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
    (void)inst;
    (void)reason;
    (void)reserved;
    return TRUE;
}
#endif

#endif
