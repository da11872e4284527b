/*
 * STAND-IN for NVIDIA's cuBLASLt (cublasLt64_10.dll, cublasLt64_11.dll ...),
 * built only for bundler's tests. Not NVIDIA code.
 *
 * It imports the CUDA runtime statically, as the real one does; the import
 * library handed to the linker decides which cudart file name that is.
 *
 * Compile-time parameter:
 *   STANDIN_CUBLAS_VERSION  the number cublasLtGetVersion reports.
 */
#include "standin.h"

#ifndef STANDIN_CUBLAS_VERSION
#error "define STANDIN_CUBLAS_VERSION"
#endif

STANDIN_IMPORT int cudaRuntimeGetVersion(int *version);

STANDIN_EXPORT size_t cublasLtGetVersion(void)
{
    return STANDIN_CUBLAS_VERSION;
}

/* Calls into cudart so the static import is used, not just declared. */
STANDIN_EXPORT size_t cublasLtGetCudartVersion(void)
{
    int version = 0;

    if (cudaRuntimeGetVersion(&version) != 0)
        return 0;
    return (size_t)version;
}
