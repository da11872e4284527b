/*
 * STAND-IN for NVIDIA's cuDNN 8 shim library (cudnn64_8.dll), built only for
 * bundler's tests. Not NVIDIA code.
 *
 * The real shim imports only KERNEL32 and finds its sub-libraries at run time
 * by bare name; that is the reason bundler cannot rely on static import
 * analysis and must preload them. This stand-in does the same.
 *
 * Compile-time parameters:
 *   STANDIN_CUDNN_VERSION   what cudnnGetVersion returns (8003 for 8.0.3;
 *                           a decoy uses 7605).
 *   STANDIN_CUDART_VERSION  what cudnnGetCudartVersion returns (10010).
 *   STANDIN_OPS_INFER_NAME  the sub-library cudnnCreate loads, as a string
 *                           (default "cudnn_ops_infer64_8.dll").
 */
#include "standin.h"

#ifndef STANDIN_CUDNN_VERSION
#error "define STANDIN_CUDNN_VERSION"
#endif
#ifndef STANDIN_CUDART_VERSION
#error "define STANDIN_CUDART_VERSION"
#endif
#ifndef STANDIN_OPS_INFER_NAME
#define STANDIN_OPS_INFER_NAME "cudnn_ops_infer64_8.dll"
#endif

typedef int (*version_check_fn)(void);
typedef size_t (*get_version_fn)(void);

STANDIN_EXPORT size_t cudnnGetVersion(void)
{
    return STANDIN_CUDNN_VERSION;
}

STANDIN_EXPORT size_t cudnnGetCudartVersion(void)
{
    return STANDIN_CUDART_VERSION;
}

/* A sub-library from another cuDNN release is refused, as the real one does. */
static int check_ops_infer(HMODULE ops)
{
    version_check_fn check;
    get_version_fn version;
    int status;

    check = (version_check_fn)(void *)GetProcAddress(ops, "cudnnOpsInferVersionCheck");
    if (check == NULL)
        return CUDNN_STATUS_NOT_INITIALIZED;
    status = check();
    if (status != CUDNN_STATUS_SUCCESS)
        return status;
    version = (get_version_fn)(void *)GetProcAddress(ops, "cudnnGetVersion");
    if (version != NULL && version() != STANDIN_CUDNN_VERSION)
        return CUDNN_STATUS_VERSION_MISMATCH;
    return CUDNN_STATUS_SUCCESS;
}

/*
 * Bare-name LoadLibraryA, exactly the pattern that picks up a wrong copy from
 * PATH unless the right one is already loaded. On failure the Windows error
 * code is left for GetLastError, and the status is NOT_INITIALIZED, the error
 * users see as "Could not create cudnn handle".
 */
STANDIN_EXPORT int cudnnCreate(void **handle)
{
    HMODULE ops;
    int status;

    if (handle == NULL)
        return CUDNN_STATUS_NOT_INITIALIZED;
    *handle = NULL;
    ops = LoadLibraryA(STANDIN_OPS_INFER_NAME);
    if (ops == NULL)
        return CUDNN_STATUS_NOT_INITIALIZED;
    status = check_ops_infer(ops);
    if (status != CUDNN_STATUS_SUCCESS)
        return status;
    *handle = (void *)ops;
    return CUDNN_STATUS_SUCCESS;
}

STANDIN_EXPORT int cudnnDestroy(void *handle)
{
    (void)handle;
    return CUDNN_STATUS_SUCCESS;
}
