/*
 * cuda.h for the wrapper files: the real types, without the renaming macros
 * that would make our definitions of exported names define something else
 * (cuda.h maps cuGetProcAddress to cuGetProcAddress_v2 unconditionally).
 * Prototypes of the per-thread variants cuda.h only declares when a program
 * is built for them follow in each family file.
 */
#ifndef CT_CUDA_API_H
#define CT_CUDA_API_H

#include <cuda.h>

#undef cuGetProcAddress

#include "shim/cuda_table.h"
#include "shim/shim.h"

#define CT_NOT_AVAILABLE CUDA_ERROR_NOT_INITIALIZED

#endif
