// CPU emulator stub for CUDA's math_constants.h (the commonly used constants)
#include "emu_prelude.h"
#ifndef EMU_MATH_CONSTANTS_H
#define EMU_MATH_CONSTANTS_H
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_INF __builtin_huge_val()
#define CUDART_NAN __builtin_nan("")
#define CUDART_PI_F 3.141592654f
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_SQRT_2_F 1.414213562f
#define CUDART_MAX_NORMAL_F 3.40282347e+38f
#define CUDART_ZERO_F 0.0f
#define CUDART_ONE_F 1.0f
#endif
