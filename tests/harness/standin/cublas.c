/*
 * STAND-IN for NVIDIA's cuBLAS (cublas64_10.dll, cublas64_11.dll ...), built
 * only for bundler's tests. Not NVIDIA code.
 *
 * It imports cuBLASLt and the CUDA runtime statically, as the real one does.
 *
 * Compile-time parameter:
 *   STANDIN_CUBLAS_VERSION  the number cublasGetVersion_v2 reports.
 */
#include "standin.h"

#ifndef STANDIN_CUBLAS_VERSION
#error "define STANDIN_CUBLAS_VERSION"
#endif

#define CUBLAS_STATUS_SUCCESS 0
#define CUBLAS_STATUS_INVALID_VALUE 7
#define CUBLAS_STATUS_INTERNAL_ERROR 14

STANDIN_IMPORT int cudaRuntimeGetVersion(int *version);
STANDIN_IMPORT size_t cublasLtGetVersion(void);

/* The handle is ignored; the call checks its own dependencies answer. */
STANDIN_EXPORT int cublasGetVersion_v2(void *handle, int *version)
{
    int runtime = 0;

    (void)handle;
    if (version == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (cudaRuntimeGetVersion(&runtime) != 0 || cublasLtGetVersion() == 0)
        return CUBLAS_STATUS_INTERNAL_ERROR;
    *version = STANDIN_CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

STANDIN_EXPORT size_t cublasGetCudartVersion(void)
{
    int version = 0;

    if (cudaRuntimeGetVersion(&version) != 0)
        return 0;
    return (size_t)version;
}
