"""No code of a kernel module runs but what its kernel calls.

NVRTC compiles what a kernel reaches and leaves out a device function nothing calls; g++ keeps
it, and runs it when the runner loads or unloads the module if it is a constructor or destructor
(`__attribute__((constructor))`, `[[gnu::destructor]]`), an ifunc resolver, or placed in a
section the loader runs (.init, .init_array ...). Such code runs only on the emulator, before or
after any launch, unseen by every check of the kernel's text, and it can reach the emulator's
machinery (the tensor-core probe's key, the instruction count). So a built module is read
(readelf, beside g++ in binutils) and refused when anything but the C runtime's own entries
and the prelude's static initialisers would run at load or unload.
"""
from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

# what crtbeginS.o and the translation unit's own static initialiser (the prelude's inline
# variables, emu::ptx::g_window) put in the arrays the loader runs
_ALLOWED = {"frame_dummy", "__do_global_dtors_aux", "_GLOBAL__sub_I_kernel.cpp"}
# sections whose contents the loader runs or whose entries it calls
_RUN_SECTIONS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors")
_CODE_SECTIONS = (".init", ".fini")
_CRT_SYMBOLS = {"_init", "_fini"}


def _readelf(so: Path, *flags: str) -> str:
    return subprocess.run(["readelf", "-W", *flags, str(so)], capture_output=True, text=True, timeout=60).stdout


def load_time_code(so: Path) -> list[str]:
    """What the module `so` would run when loaded or unloaded beyond the allowed entries: the
    names of those functions (or a description), empty when nothing."""
    sections = {}  # name -> (index, address, size)
    for m in re.finditer(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)",
                         _readelf(so, "-S"), re.M):
        sections[m[2]] = (int(m[1]), int(m[3], 16), int(m[4], 16))
    symbols, by_section, named = {}, {}, Counter()
    table = _readelf(so, "-s")
    ifuncs = sorted({m[1] for m in re.finditer(r"\sIFUNC\s+\w+\s+\w+\s+\w+\s+(\S+)", table)})
    for m in re.finditer(r"^\s*\d+:\s+([0-9a-f]+)\s+\d+\s+(\w+)\s+\w+\s+\w+\s+(\w+)\s+(\S+)",
                         table, re.M):
        value, kind, ndx, name = int(m[1], 16), m[2], m[3], m[4].split("@")[0]
        if kind == "FUNC" and value:
            symbols.setdefault(value, name)
            named[name] += 1
        if ndx.isdigit():
            by_section.setdefault(int(ndx), set()).add(name)
    # a function of the kernel's own named like an allowed entry would pass for it
    found = [f"a second {n}" for n in sorted(_ALLOWED) if named[n] > 1]
    found += [f"{n} (an ifunc: its resolver runs when the module is loaded)" for n in ifuncs]
    for name in _CODE_SECTIONS:  # only the C runtime's prologue and epilogue
        if name in sections:
            extra = by_section.get(sections[name][0], set()) - _CRT_SYMBOLS
            found += [f"{n} (in {name})" for n in sorted(extra)]
    spans = [(n, a, a + s) for n, (_, a, s) in sections.items() if n in _RUN_SECTIONS]
    relocs = _readelf(so, "-r")
    if "IRELATIV" in relocs:
        found.append("an ifunc resolver")
    for ln in relocs.splitlines():
        parts = ln.split()
        if len(parts) < 3 or not re.fullmatch(r"[0-9a-f]{8,16}", parts[0]):
            continue
        at = int(parts[0], 16)
        where = next((n for n, lo, hi in spans if lo <= at < hi), None)
        if where is None:
            continue
        if parts[2].endswith("_RELATIVE") and len(parts) >= 4:
            target = symbols.get(int(parts[3], 16), f"code at {parts[3]}")
        else:  # a symbol's address: its name (readelf: value name + addend)
            target = parts[4] if len(parts) >= 5 else "?"
        if target not in _ALLOWED:
            found.append(f"{target} (in {where})")
    return found
