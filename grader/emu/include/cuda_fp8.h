// CPU emulator stub: the real definitions live in emu_prelude.h
#include "emu_prelude.h"
