// Memory traffic as a GPU would see it (included by runner.cpp; used only when a launch asks
// for it: INPUT flag 16 and a module built with g++ -fsanitize=kernel-address and outline
// checks, so every load and store of the kernel calls __asan_{load,store}N_noabort here).
//
// A warp's "request" is one instruction executed by its lanes together. Lanes run one after
// another between collectives here, so the k-th execution of an instruction (its PC) by one
// lane is matched with the k-th execution of the same PC by the other lanes of its warp (what a
// converged warp does). Per request:
//   global memory: the 32-byte sectors its lanes touch (a GPU moves whole sectors), against the
//     fewest that could hold the bytes it uses;
//   shared memory: wavefronts, i.e. for each phase (32 lanes for 4-byte accesses, 16 for 8-byte,
//     8 for 16-byte) the largest number of DIFFERENT 4-byte words that fall in one of the 32
//     banks (the same word is a broadcast), against one per phase; and the bytes of different words
//     the lanes read (a broadcast counts once: what the wavefronts must carry at least).
// Per argument buffer: the bytes loaded and stored, so reuse (or its absence) shows.
// Totals are kept per PC; launch.py maps PCs to the user's lines (addr2line).
#include <unordered_map>

namespace {
struct TrReq {
  unsigned char space, write, size, n;  // space 1 global, 2 shared; n lanes seen
  unsigned lanes;                       // which lanes took part (lanes run in any order here)
  uintptr_t at[32];                     // per lane; shared: offset from the start of its region
  uintptr_t addr[32];                   // the participants' addresses in lane order (tr_fold)
};
struct TrPc {
  unsigned char space, write;
  unsigned long long requests = 0, units = 0, ideal = 0, bytes = 0;
  unsigned long long distinct = 0;  // bytes of DIFFERENT addresses (a broadcast counts once)
  unsigned long long lanes = 0;  // lanes that took part, summed over requests (32 each: no divergence)
};
struct TrBuf { unsigned long long loaded = 0, stored = 0; };


uintptr_t g_tr_glo = ~(uintptr_t)0, g_tr_ghi = 0;  // span of all argument buffers
std::vector<std::unordered_map<uintptr_t, unsigned>> g_tr_occ;  // per thread: PC -> executions
std::vector<std::unordered_map<unsigned long long, TrReq>> g_tr_req;  // per warp: (PC, k) -> request
std::unordered_map<uintptr_t, TrPc> g_tr_pc;
std::vector<TrBuf> g_tr_buf;

void tr_init() {
  g_tr_on = true;
  for (const Buffer& B : g_bufs) {
    if ((uintptr_t)B.start < g_tr_glo) g_tr_glo = (uintptr_t)B.start;
    if ((uintptr_t)B.end > g_tr_ghi) g_tr_ghi = (uintptr_t)B.end;
  }
  g_tr_buf.assign(g_bufs.size(), TrBuf());
}

void tr_block_start() {
  g_tr_occ.assign(g_nthreads, {});
  g_tr_req.assign(g_nwarps, {});
}

void tr_fold(TrReq& q, uintptr_t pc) {
  q.n = 0;  // lane order: a hardware phase is a range of lanes
  for (unsigned l = 0; l < 32; ++l) if (q.lanes >> l & 1) q.addr[q.n++] = q.at[l];
  TrPc& s = g_tr_pc[pc];
  s.space = q.space; s.write = q.write;
  ++s.requests;
  s.lanes += q.n;
  if (q.space == 1) {
    uintptr_t sec[64]; unsigned ns = 0; unsigned long long bytes = 0;
    uintptr_t seen[32]; unsigned nseen = 0;
    for (unsigned i = 0; i < q.n; ++i) {
      bool dup = false;
      for (unsigned j = 0; j < nseen; ++j) if (seen[j] == q.addr[i]) { dup = true; break; }
      if (dup) continue;  // the same address by several lanes: one access
      seen[nseen++] = q.addr[i];
      bytes += q.size;
      for (uintptr_t a = q.addr[i] >> 5; a <= (q.addr[i] + q.size - 1) >> 5; ++a) {
        bool have = false;
        for (unsigned j = 0; j < ns; ++j) if (sec[j] == a) { have = true; break; }
        if (!have && ns < 64) sec[ns++] = a;
      }
    }
    s.units += ns;
    s.ideal += (bytes + 31) / 32;
    s.bytes += bytes;
    s.distinct += bytes;  // (global bytes are counted once per address already)
  } else {
    unsigned per = q.size <= 4 ? 32 : q.size == 8 ? 16 : 8;  // lanes per phase
    for (unsigned p0 = 0; p0 < q.n; p0 += per) {
      // every 4-byte word the phase's lanes touch (an 8- or 16-byte access spans 2 or 4 banks)
      uintptr_t words[128]; unsigned nw = 0;
      for (unsigned i = p0; i < q.n && i < p0 + per; ++i)
        for (uintptr_t w = q.addr[i] >> 2; w <= (q.addr[i] + q.size - 1) >> 2 && nw < 128; ++w) {
          bool have = false;
          for (unsigned j = 0; j < nw; ++j) if (words[j] == w) { have = true; break; }  // same word: broadcast
          if (!have) words[nw++] = w;
        }
      unsigned per_bank[32] = {0}, worst = 1;
      for (unsigned j = 0; j < nw; ++j) if (++per_bank[words[j] & 31] > worst) worst = per_bank[words[j] & 31];
      s.units += worst;
      s.ideal += 1;
      s.distinct += 4ull * nw;
    }
    s.bytes += (unsigned long long)q.n * q.size;
  }
}

void tr_block_end() {
  for (auto& m : g_tr_req)
    for (auto& kv : m) tr_fold(kv.second, (uintptr_t)(kv.first & ((1ull << 40) - 1)));
  g_tr_req.clear();
  g_tr_occ.clear();
}

inline void tr_access(uintptr_t a, unsigned size, unsigned char write, uintptr_t pc) {
  Fiber* f = (Fiber*)__emu_cur;
  if (!f) return;
  unsigned char space = 0;
  uintptr_t key_addr = a;
  if (a >= g_tr_glo && a < g_tr_ghi) {
    for (size_t i = 0; i < g_bufs.size(); ++i)
      if (a >= (uintptr_t)g_bufs[i].start && a < (uintptr_t)g_bufs[i].end) {
        space = 1;
        (write ? g_tr_buf[i].stored : g_tr_buf[i].loaded) += size;
        break;
      }
  }
  if (!space) {
    if (g_smem_size && a >= (uintptr_t)g_smem && a < (uintptr_t)g_smem + g_smem_size) {
      space = 2; key_addr = a - (uintptr_t)g_smem;
    } else {
      for (__emu_shared_base* s = g_shared_head; s; s = s->next)
        if (a >= (uintptr_t)s->data && a < (uintptr_t)s->data + s->bytes) { space = 2; break; }  // 128-aligned
    }
  }
  if (!space) return;
  uintptr_t off = pc - g_mod_base;
  unsigned k = ++g_tr_occ[f->t.tid][off];
  TrReq& q = g_tr_req[f->t.warp][(unsigned long long)off | ((unsigned long long)k << 40)];
  if (q.lanes == 0) { q.space = space; q.write = write; q.size = (unsigned char)(size > 255 ? 255 : size); }
  q.lanes |= 1u << f->t.lane;
  q.at[f->t.lane] = key_addr;
}

void tr_write(const char* path) {
  FILE* fp = fopen(path, "w");
  if (!fp) return;
  for (auto& kv : g_tr_pc)
    fprintf(fp, "pc=%lx,%u,%u,%llu,%llu,%llu,%llu,%llu,%llu\n", (unsigned long)kv.first, kv.second.space,
            kv.second.write, kv.second.requests, kv.second.units, kv.second.ideal, kv.second.bytes, kv.second.distinct,
            kv.second.lanes);
  for (size_t i = 0; i < g_bufs.size(); ++i)
    fprintf(fp, "buffer=%s,%zu,%llu,%llu\n", g_bufs[i].name.c_str(), g_bufs[i].nbytes, g_tr_buf[i].loaded,
            g_tr_buf[i].stored);
  fclose(fp);
}
}  // namespace

// the outline checks g++ -fsanitize=kernel-address emits (only in a traffic build)
#define EMU_TR(N)                                                                                        \
  extern "C" void __asan_load##N##_noabort(uintptr_t a) {                                                \
    if (g_tr_on) tr_access(a, N, 0, (uintptr_t)__builtin_return_address(0));                           \
  }                                                                                                      \
  extern "C" void __asan_store##N##_noabort(uintptr_t a) {                                               \
    if (g_tr_on) tr_access(a, N, 1, (uintptr_t)__builtin_return_address(0));                           \
  }
EMU_TR(1) EMU_TR(2) EMU_TR(4) EMU_TR(8) EMU_TR(16)
extern "C" void __asan_loadN_noabort(uintptr_t a, size_t n) {
  if (g_tr_on) tr_access(a, (unsigned)n, 0, (uintptr_t)__builtin_return_address(0));
}
extern "C" void __asan_storeN_noabort(uintptr_t a, size_t n) {
  if (g_tr_on) tr_access(a, (unsigned)n, 1, (uintptr_t)__builtin_return_address(0));
}
extern "C" void __asan_handle_no_return(void) {}
extern "C" void __asan_before_dynamic_init(const char*) {}
extern "C" void __asan_after_dynamic_init(void) {}
extern "C" void __asan_register_globals(void*, size_t) {}
extern "C" void __asan_unregister_globals(void*, size_t) {}
extern "C" void __emu_tr_note(const void* p, unsigned bytes, int write) {
  if (g_tr_on) tr_access((uintptr_t)p, bytes, (unsigned char)(write != 0), (uintptr_t)__builtin_return_address(0));
}
