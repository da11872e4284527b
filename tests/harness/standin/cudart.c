/*
 * STAND-IN for NVIDIA's CUDA runtime (cudart64_101.dll, cudart64_110.dll ...),
 * built only for bundler's tests. Not NVIDIA code.
 *
 * Compile-time parameter:
 *   STANDIN_CUDART_VERSION  e.g. 10010 for CUDA 10.1 (what the real
 *                           cudaRuntimeGetVersion reports).
 */
#include "standin.h"

#ifndef STANDIN_CUDART_VERSION
#error "define STANDIN_CUDART_VERSION"
#endif

#define cudaSuccess 0
#define cudaErrorInvalidValue 1

typedef int (*cu_driver_get_version_fn)(int *);

STANDIN_EXPORT int cudaRuntimeGetVersion(int *version)
{
    if (version == NULL)
        return cudaErrorInvalidValue;
    *version = STANDIN_CUDART_VERSION;
    return cudaSuccess;
}

/*
 * Like the real runtime, the driver is found at run time by bare name, never
 * imported statically: with no driver the call succeeds and reports 0.
 */
STANDIN_EXPORT int cudaDriverGetVersion(int *version)
{
    HMODULE driver;
    cu_driver_get_version_fn get;

    if (version == NULL)
        return cudaErrorInvalidValue;
    *version = 0;
    driver = LoadLibraryA("nvcuda.dll");
    if (driver == NULL)
        return cudaSuccess;
    get = (cu_driver_get_version_fn)(void *)GetProcAddress(driver, "cuDriverGetVersion");
    if (get != NULL && get(version) != 0)
        *version = 0;
    return cudaSuccess;
}
