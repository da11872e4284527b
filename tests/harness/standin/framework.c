/*
 * STAND-IN for a deep-learning framework's native module (TensorFlow's
 * _pywrap_tensorflow_internal.pyd, Paddle's core_avx.pyd ...), built only for
 * bundler's tests.
 *
 * Those frameworks load cudnn64_8.dll with a plain LoadLibrary by bare name.
 * That load searches PATH, ignores os.add_dll_directory folders, and returns
 * whatever module of that name is already loaded. It is the behaviour bundler
 * works around, so this stand-in reproduces exactly that call.
 *
 * Compile-time parameter:
 *   STANDIN_CUDNN_NAME  the DLL to load, as a string (default "cudnn64_8.dll")
 */
#include "standin.h"

#ifndef STANDIN_CUDNN_NAME
#define STANDIN_CUDNN_NAME "cudnn64_8.dll"
#endif

typedef size_t (*get_version_fn)(void);
typedef int (*create_fn)(void **);

/* Returns the cuDNN version, or -1 with the Windows error kept for GetLastError. */
STANDIN_EXPORT int framework_cudnn_version(void)
{
    HMODULE cudnn = LoadLibraryA(STANDIN_CUDNN_NAME);
    get_version_fn get;

    if (cudnn == NULL)
        return -1;
    get = (get_version_fn)(void *)GetProcAddress(cudnn, "cudnnGetVersion");
    if (get == NULL)
        return -1;
    return (int)get();
}

/*
 * Writes the full path of the cudnn64_8.dll the framework ended up with.
 * Returns its length, or -1 with the Windows error kept for GetLastError.
 */
STANDIN_EXPORT int framework_cudnn_path(char *buf, int n)
{
    HMODULE cudnn;
    DWORD len;

    if (buf == NULL || n <= 0)
        return -1;
    buf[0] = '\0';
    cudnn = LoadLibraryA(STANDIN_CUDNN_NAME);
    if (cudnn == NULL)
        return -1;
    len = GetModuleFileNameA(cudnn, buf, (DWORD)n);
    if (len == 0 || len >= (DWORD)n)
        return -1;
    return (int)len;
}

/*
 * Creates a handle the way a framework's first convolution does: returns the
 * cudnnStatus_t (1 = "Could not create cudnn handle"), or -1 if cuDNN itself
 * could not be loaded.
 */
STANDIN_EXPORT int framework_cudnn_create(void)
{
    HMODULE cudnn = LoadLibraryA(STANDIN_CUDNN_NAME);
    create_fn create;
    void *handle = NULL;

    if (cudnn == NULL)
        return -1;
    create = (create_fn)(void *)GetProcAddress(cudnn, "cudnnCreate");
    if (create == NULL)
        return -1;
    return create(&handle);
}
