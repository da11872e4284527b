/*
 * STAND-IN for one of NVIDIA's cuDNN 8 sub-libraries
 * (cudnn_{ops,cnn,adv}_{infer,train}64_8.dll), built only for bundler's
 * tests. Not NVIDIA code.
 *
 * One source serves all six; the macros pick which one. Each imports cuBLAS,
 * cuBLASLt and the CUDA runtime statically, plus the sub-libraries the real
 * one imports. Which *file names* those imports carry is decided by the
 * import libraries given to the linker, so the same source builds a CUDA 10.1
 * set (cublas64_10.dll ...) or a CUDA 11 set (cublas64_11.dll ...).
 *
 * Compile-time parameters:
 *   STANDIN_CHECK_FN        this library's exported version check, e.g.
 *                           cudnnOpsInferVersionCheck
 *   STANDIN_CUDNN_VERSION   e.g. 8003
 *   STANDIN_EXPORT_GET_VERSION  defined for ops_infer, which (like the real
 *                           one) also exports cudnnGetVersion
 *   STANDIN_USE_CUDA        defined to import and call the CUDA libraries
 *   STANDIN_DEP_OPS_INFER, STANDIN_DEP_OPS_TRAIN, STANDIN_DEP_CNN_INFER,
 *   STANDIN_DEP_ADV_INFER   defined for each sub-library imported
 */
#include "standin.h"

#ifndef STANDIN_CHECK_FN
#error "define STANDIN_CHECK_FN"
#endif
#ifndef STANDIN_CUDNN_VERSION
#error "define STANDIN_CUDNN_VERSION"
#endif

#ifdef STANDIN_USE_CUDA
STANDIN_IMPORT int cudaRuntimeGetVersion(int *version);
STANDIN_IMPORT size_t cublasLtGetVersion(void);
STANDIN_IMPORT int cublasGetVersion_v2(void *handle, int *version);
#endif
#ifdef STANDIN_DEP_OPS_INFER
STANDIN_IMPORT int cudnnOpsInferVersionCheck(void);
#endif
#ifdef STANDIN_DEP_OPS_TRAIN
STANDIN_IMPORT int cudnnOpsTrainVersionCheck(void);
#endif
#ifdef STANDIN_DEP_CNN_INFER
STANDIN_IMPORT int cudnnCnnInferVersionCheck(void);
#endif
#ifdef STANDIN_DEP_ADV_INFER
STANDIN_IMPORT int cudnnAdvInferVersionCheck(void);
#endif

#ifdef STANDIN_EXPORT_GET_VERSION
STANDIN_EXPORT size_t cudnnGetVersion(void)
{
    return STANDIN_CUDNN_VERSION;
}
#endif

/* Calls every import so each one is a real, used static dependency. */
static int check_cuda(void)
{
#ifdef STANDIN_USE_CUDA
    int runtime = 0;
    int blas = 0;

    if (cudaRuntimeGetVersion(&runtime) != 0 || runtime == 0)
        return CUDNN_STATUS_INTERNAL_ERROR;
    if (cublasLtGetVersion() == 0 || cublasGetVersion_v2(NULL, &blas) != 0)
        return CUDNN_STATUS_INTERNAL_ERROR;
#endif
    return CUDNN_STATUS_SUCCESS;
}

static int check_sublibs(void)
{
    int status = CUDNN_STATUS_SUCCESS;

#ifdef STANDIN_DEP_OPS_INFER
    if (status == CUDNN_STATUS_SUCCESS)
        status = cudnnOpsInferVersionCheck();
#endif
#ifdef STANDIN_DEP_OPS_TRAIN
    if (status == CUDNN_STATUS_SUCCESS)
        status = cudnnOpsTrainVersionCheck();
#endif
#ifdef STANDIN_DEP_CNN_INFER
    if (status == CUDNN_STATUS_SUCCESS)
        status = cudnnCnnInferVersionCheck();
#endif
#ifdef STANDIN_DEP_ADV_INFER
    if (status == CUDNN_STATUS_SUCCESS)
        status = cudnnAdvInferVersionCheck();
#endif
    return status;
}

STANDIN_EXPORT int STANDIN_CHECK_FN(void)
{
    int status = check_cuda();

    if (status != CUDNN_STATUS_SUCCESS)
        return status;
    return check_sublibs();
}
