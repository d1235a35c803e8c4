"""Plumbing for notebook 05 (fragment mapping probes): run every probe of
kernels/fragment_probe.cu on this machine's backend, draw a map (lane -> colour, x index as
text), a widget to pick the kind and highlight a lane, and the comparison with the PTX ISA's
documented mma.m16n8k16 fragment layout.

The expected maps and the recorded H200 maps live in grader.fragments (one home).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grader.problems import fragments
from grader.problems.fragments import KINDS

# Kinds in the order a lecturer walks through them (the dropdown's order).
ORDER = ["a_f16_row", "a_f16_col", "b_f16_row", "b_f16_col", "acc_f32", "acc_f16", "acc_f32_mma",
         "a_m32n8k16", "b_m32n8k16", "acc_m32n8k16", "a_m8n32k16", "b_m8n32k16", "acc_m8n32k16",
         "a_bf16", "b_bf16", "a_tf32", "b_tf32", "acc_tf32", "a_f64", "b_f64", "acc_f64"]

_USE = {"a": "matrix_a", "b": "matrix_b", "acc": "accumulator"}


def describe(kind: str) -> str:
    """e.g. 'matrix_a m16n16k16 half row_major (16 x 16)'."""
    k = KINDS[kind]
    layout = "" if k.use == "acc" else (" col_major" if k.layout == "col" else " row_major")
    extra = " (after a real mma_sync: D = A * I)" if kind == "acc_f32_mma" else ""
    return f"{_USE[k.use]} {k.shape} {k.element}{layout} ({k.rows} x {k.cols}){extra}"


@dataclass
class MapSet:
    maps: dict  # kind -> (32, num_elements) int array of row-major indices
    where: str  # the machine the maps come from, in words
    backend: str  # "gpu", "emu" or "recorded"
    arch: int = fragments.MMA_LAYOUT  # whose layout the measured maps show
    recorded_kinds: tuple = ()  # kinds this arch lacks (bf16, tf32, fp64 below sm_80): H200's maps


def measure_all(backend: str = "auto", arch: int | None = None) -> MapSet:
    """Run the probe of every kind `arch` has on `backend` ("auto": the GPU if there is one,
    else the course's CPU emulator) and return the maps; kinds it lacks come from the H200
    recording. arch=None: the GPU as it is (TC_ARCH included), or the emulator's sm_90; the
    emulator with arch=70 shows Volta's layout."""
    from grader.runtime.backend import load, pick
    from grader.runtime.device import device_info

    chosen = pick(backend)
    info = device_info() if chosen == "gpu" else None
    target = arch or (info.cc if info else fragments.MMA_LAYOUT)
    module = load(fragments.probe_source(target), chosen, arch=arch)
    xp = module.xp
    maps, rec = {}, fragments.measured_maps()
    for kind in ORDER:
        if not fragments.supported(kind, target):
            maps[kind] = rec[kind]
            continue
        held = xp.full(32 * 16, -1, dtype=np.int32)  # no fragment holds more than 16 per lane
        module.launch(KINDS[kind].kernel, (1, 1, 1), (32, 1, 1), [xp.asarray(fragments.probe_input(kind)), held])
        h = held.get() if hasattr(held, "get") else np.asarray(held)
        used = int((h >= 0).sum())
        maps[kind] = h[:used].reshape(32, used // 32).astype(np.int64)
    missing = tuple(k for k in ORDER if not fragments.supported(k, target))
    if info is not None:
        where, layout = f"{info.name} ({info.arch}), measured now", info.native_cc  # the hardware's layout
    else:
        where, layout = f"the course's CPU emulator as sm_{target} ({_layout_name(target)}), measured now", target
    if missing:
        where += "; bf16/tf32/fp64 need sm_80: recorded on an H200"
    return MapSet(maps, where, module.backend, layout, missing)


def _layout_name(arch: int) -> str:
    return "Volta's layout" if arch < 75 else "the sm_80/sm_90 layout"


def recorded() -> MapSet:
    """The maps recorded on an H200 (kernels/fragment_maps_sm90.json)."""
    import json

    meta = json.loads(fragments.MEASURED_JSON.read_text())
    return MapSet(fragments.measured_maps(), f"{meta['device']} ({meta['arch']}), recorded {meta['date']}",
                  "recorded", int(meta["arch"].removeprefix("sm_")))


def owners(kind: str, held: np.ndarray):
    """lane[r, c] = first lane holding (r, c); slots[r, c] = its x indices (list)."""
    k = KINDS[kind]
    lane = -np.ones((k.rows, k.cols), dtype=int)
    slots = [[[] for _ in range(k.cols)] for _ in range(k.rows)]
    for L in range(32):
        for i, v in enumerate(held[L]):
            r, c = divmod(int(v), k.cols)
            if lane[r, c] < 0:
                lane[r, c] = L
            if lane[r, c] == L:
                slots[r][c].append(i)
    return lane, slots


def lane_colors():
    """32 colours: hue by lane // 4, shade by lane % 4 (tab20b + tab20c: 10 hues x 4 shades)."""
    import matplotlib

    pal = list(matplotlib.colormaps["tab20b"].colors) + list(matplotlib.colormaps["tab20c"].colors)
    return [pal[L] for L in range(32)]


# Font sizes (points) of the maps: readable on a projector (slot numbers, ticks, titles).
SLOT_PT, TICK_PT, TITLE_PT, LABEL_PT = 10, 9, 10, 10


def _wrap(text: str, width_in: float, pt: float) -> str:
    """Wrap each line of `text` to about the width of `width_in` inches at `pt` points."""
    import textwrap

    chars = max(20, int(width_in * 72 / (0.55 * pt)))
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False) for line in text.split("\n"))


def plot_map(kind: str, held: np.ndarray, lane: int = -1, ax=None, where: str = ""):
    """Draw the matrix of `kind`: each element coloured by the lane that holds it, its x index
    as text. `lane` >= 0 highlights one lane (the others fade)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    k = KINDS[kind]
    owner, slots = owners(kind, held)
    colors = lane_colors()
    own_ax = ax is None
    if own_ax:
        cell = 0.5 if k.cols <= 16 else 0.36  # inches per element: room for a 10 pt "15+"
        w = max(5.5, cell * k.cols + 1.3)
        fig, ax = plt.subplots(figsize=(w, cell * k.rows + 2.0))
    fig = ax.figure
    for r in range(k.rows):
        for c in range(k.cols):
            L = owner[r, c]
            faded = lane >= 0 and L != lane
            face = "#f2f2f2" if faded else colors[L]
            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=face, edgecolor="white", lw=0.8))
            if not faded and slots[r][c]:
                s = slots[r][c]
                text = str(s[0]) if len(s) == 1 else f"{s[0]}+"
                ax.text(c + 0.5, r + 0.5, text, ha="center", va="center",
                        fontsize=SLOT_PT if k.cols <= 16 else SLOT_PT - 1, color="black")
    # quadrant lines every 8 (the structure the Salerno paper found)
    for x in range(8, k.cols, 8):
        ax.axvline(x, color="black", lw=1.2)
    for y in range(8, k.rows, 8):
        ax.axhline(y, color="black", lw=1.2)
    ax.set_xlim(0, k.cols)
    ax.set_ylim(k.rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(k.cols) + 0.5, [str(c) for c in range(k.cols)], fontsize=TICK_PT)
    ax.set_yticks(np.arange(k.rows) + 0.5, [str(r) for r in range(k.rows)], fontsize=TICK_PT)
    n = held.shape[1]
    distinct = len({int(v) for v in held[0]})
    note = f"{n} slot{'s' if n > 1 else ''} per lane" + (f", {distinct} distinct" if distinct < n else "")
    head = f"{describe(kind)}: {note}"
    if lane >= 0:
        mine = sorted((i, divmod(int(v), k.cols)) for i, v in enumerate(held[lane]))
        head += f"\nlane {lane}: " + " ".join(f"x[{i}]={rc}" for i, rc in mine[:8]) + (" ..." if n > 8 else "")
    # wrap to the width the axes get in the figure (at least the map's own width)
    width_in = max(ax.get_position(original=True).width * fig.get_figwidth(), 3.0)
    ax.set_title(_wrap(head + (f"\n{where}" if where else ""), width_in, TITLE_PT), fontsize=TITLE_PT)
    ax.set_xlabel(_wrap("column\n" + ("(text: the x[i] index; '3+' = also at later slots)" if distinct < n else
                                       "(text: the x[i] index)"), width_in, LABEL_PT), fontsize=LABEL_PT)
    ax.set_ylabel("row", fontsize=LABEL_PT)
    if own_ax:
        plt.tight_layout()
        plt.show()
    return ax


def lane_legend():
    """A strip of the 32 lane colours."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(figsize=(11, 0.8))
    for L, col in enumerate(lane_colors()):
        ax.add_patch(Rectangle((L, 0), 1, 1, facecolor=col, edgecolor="white"))
        ax.text(L + 0.5, 0.5, str(L), ha="center", va="center", fontsize=SLOT_PT)
    ax.set_xlim(0, 32)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.set_title("colour of each lane (a quad, lanes 4g .. 4g+3, shares a hue)", fontsize=TITLE_PT)
    plt.show()


def widget(mapset: MapSet):
    """Dropdown of the fragment kinds and a lane slider (-1: no highlight)."""
    import ipywidgets as w

    kinds = [(describe(k), k) for k in ORDER if k in mapset.maps]

    def show(kind="a_f16_row", lane=-1):
        plot_map(kind, mapset.maps[kind], lane, where=mapset.where)

    return w.interact(show, kind=w.Dropdown(options=kinds, value="a_f16_row", description="fragment",
                                            layout=w.Layout(width="520px")),
                      lane=w.IntSlider(value=-1, min=-1, max=31, description="lane"))


def agreement(mapset: MapSet) -> list[dict]:
    """Per kind: slots per lane, mismatches against the formulas of grader/problems/fragments.py and,
    for maps measured now (GPU or emulator), against the maps recorded on an H200. Maps that ARE
    the recorded ones (no GPU) get no such column: it would compare them with themselves."""
    rec = fragments.measured_maps()
    rows = []
    for kind in ORDER:
        if kind not in mapset.maps:
            continue
        got = mapset.maps[kind]
        from_h200 = kind in mapset.recorded_kinds
        arch = fragments.MMA_LAYOUT if from_h200 else mapset.arch
        if fragments.has_expected(kind, arch):
            exp = fragments.expected_map(kind, arch)
            vs_exp = int((got != exp).sum()) if got.shape == exp.shape else "shape differs"
        else:
            vs_exp = f"no formula for sm_{arch}"
        row = {"kind": describe(kind), "slots per lane": got.shape[1], "mismatches vs formula": vs_exp}
        if mapset.backend != "recorded":
            r = rec.get(kind)
            row["mismatches vs recorded H200"] = ("(is the recording)" if from_h200 else "-" if r is None
                                                  else int((got != r).sum()) if got.shape == r.shape
                                                  else "shape differs")
        row["ok"] = vs_exp == 0 or isinstance(vs_exp, str) and vs_exp.startswith("no formula")
        rows.append(row)
    return rows


# ----------------------------------------------------------------- the PTX ISA's layout
def ptx_m16n8k16(operand: str, lane: int, reg: int) -> tuple[int, int]:
    """(row, col) of element `reg` of `lane` in the PTX ISA's fragment layout of
    mma.m16n8k16 with .f16 A/B and .f32 C/D (PTX ISA, "Matrix Fragments for mma.m16n8k16
    with floating point type"). groupID = lane >> 2, threadID_in_group = lane % 4.
    A (16x16): a0..a7; B (16x8): b0..b3; C/D (16x8): c0..c3."""
    g, t = lane >> 2, lane % 4
    if operand == "a":
        row = g if reg in (0, 1, 4, 5) else g + 8
        col = t * 2 + (reg & 1) + (8 if reg >= 4 else 0)
        return row, col
    if operand == "b":
        row = t * 2 + (reg & 1) + (8 if reg >= 2 else 0)
        return row, g
    if operand == "c":
        row = g if reg < 2 else g + 8
        return row, t * 2 + (reg & 1)
    raise ValueError("operand is 'a', 'b' or 'c'")


def wmma_as_ptx(kind: str, lane: int, i: int) -> tuple[int, int]:
    """The WMMA m16n16k16 slot x[i] predicted as two mma.m16n8k16 side by side:
    A: a0..a7 as is; B and C/D: slots 0-3 the left n8 half, slots 4-7 the right one."""
    if kind.startswith("a_f16"):
        return ptx_m16n8k16("a", lane, i % 8)
    if kind.startswith("b_f16"):
        r, c = ptx_m16n8k16("b", lane, i % 4)
        return r, c + 8 * ((i % 8) // 4)
    if kind.startswith("acc"):
        r, c = ptx_m16n8k16("c", lane, i % 4)
        return r, c + 8 * (i // 4)
    raise ValueError(kind)


def ptx_agreement(mapset: MapSet) -> dict:
    """kind -> number of slots where the measured m16n16k16 map differs from the PTX layout."""
    out = {}
    for kind in ("a_f16_row", "a_f16_col", "b_f16_row", "b_f16_col", "acc_f32", "acc_f32_mma"):
        held = mapset.maps[kind]
        cols = KINDS[kind].cols
        bad = 0
        for lane in range(32):
            for i in range(held.shape[1]):
                bad += divmod(int(held[lane, i]), cols) != wmma_as_ptx(kind, lane, i)
        out[kind] = bad
    return out


# ----------------------------------------------------------- legal and illegal operations
BIAS_KERNELS = [("add_bias_guess", "a guessed layout"), ("add_bias_positional", "the sm_80/sm_90 layout"),
                ("add_bias_portable", "a second fragment (portable)")]


def bias_demo(backend: str = "auto", plot: bool = True, arch: int | None = None) -> dict:
    """Run kernels/fragment_illegal_op.cu: D = C + bias[col] three ways, and scale_relu.
    Returns kernel -> number of wrong elements (of 256); plots what each added to C.
    backend="emu", arch=70: the same kernels with Volta's fragment layout."""
    from grader.runtime import kernels
    from grader.runtime.backend import load

    m = load(kernels.source("fragment_illegal_op"), backend, arch=arch)
    xp = m.xp
    rng = np.random.default_rng()
    C = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    bias = (10.0 * np.arange(16)).astype(np.float32)  # column j gets 10 j
    want = C + bias
    wrong, added = {}, {}
    for name, _ in BIAS_KERNELS:
        D = xp.full((16, 16), np.nan, dtype=np.float32)
        m.launch(name, (1, 1, 1), (32, 1, 1), [xp.asarray(C), xp.asarray(bias), D])
        D = D.get() if hasattr(D, "get") else D
        wrong[name] = int((~(np.abs(D - want) <= 1e-5)).sum())
        added[name] = D - C
    D = xp.full((16, 16), np.nan, dtype=np.float32)
    m.launch("scale_relu", (1, 1, 1), (32, 1, 1), [xp.asarray(C), 2.0, D])
    D = D.get() if hasattr(D, "get") else D
    wrong["scale_relu"] = int((~(np.abs(D - np.maximum(2 * C, 0)) <= 1e-6)).sum())
    if plot:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 4, figsize=(13, 4))
        panels = [("wanted: bias[col] = 10 col", np.broadcast_to(bias, (16, 16)))]
        panels += [(f"{name}\n({how}): {wrong[name]} wrong", added[name]) for name, how in BIAS_KERNELS]
        for ax, (title, img) in zip(axes, panels):
            ax.imshow(img, cmap="viridis", vmin=0, vmax=150)
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("column")
            ax.set_xticks([0, 8, 15])
            ax.set_yticks([0, 8, 15])
        axes[0].set_ylabel("row")
        on = f"{m.backend}" + (f", as sm_{arch}" if arch else "")
        fig.suptitle(f"what each kernel added to C (backend: {on})", fontsize=11)
        plt.tight_layout()
        plt.show()
    return wrong
