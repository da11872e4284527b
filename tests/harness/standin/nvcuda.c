/*
 * STAND-IN for the NVIDIA display driver's nvcuda.dll, built only for
 * bundler's tests. Not NVIDIA code.
 *
 * The real file comes with the driver and is never bundled; tests use this
 * one to play a machine with a given (e.g. too old) driver.
 *
 * Compile-time parameter:
 *   STANDIN_DRIVER_CUDA_VERSION  what cuDriverGetVersion reports: the newest
 *                                CUDA the driver supports (10000 = 10.0,
 *                                too old for a CUDA 10.1 runtime).
 */
#include "standin.h"

#ifndef STANDIN_DRIVER_CUDA_VERSION
#error "define STANDIN_DRIVER_CUDA_VERSION"
#endif

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1

STANDIN_EXPORT int cuDriverGetVersion(int *version)
{
    if (version == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *version = STANDIN_DRIVER_CUDA_VERSION;
    return CUDA_SUCCESS;
}

/* Flags must be 0, as for the real driver. */
STANDIN_EXPORT int cuInit(unsigned int flags)
{
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
