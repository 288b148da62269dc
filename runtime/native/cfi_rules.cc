#include "runtime/native/cfi_rules.h"

#include <dlfcn.h>

#include <cstring>

namespace deepcontext::native {
namespace {

// libgcc's FDE lookup (exported by libgcc_s since GCC 3.0, used by every C++
// exception): finds the FDE covering `pc` through dl_iterate_phdr and the
// modules' .eh_frame_hdr search tables. `func` receives the function start.
struct DwarfEhBases {
  void* tbase;
  void* dbase;
  void* func;
};
using FindFdeFn = const void* (*)(void* pc, DwarfEhBases* bases);

FindFdeFn FindFde() {
  static const FindFdeFn fn = reinterpret_cast<FindFdeFn>(
      dlsym(RTLD_DEFAULT, "_Unwind_Find_FDE"));
  return fn;
}

// DWARF register numbers of the frame pointer and the stack pointer (named
// after x86-64's below), and the stack pointer a function is entered with:
// the CIE's first row (CFA = rsp + 8 past the pushed return address on
// x86-64, CFA = sp on AArch64).
#if defined(__x86_64__)
constexpr bool kModelledArchitecture = true;
constexpr uint64_t kRegRbp = 6;
constexpr uint64_t kRegRsp = 7;
#elif defined(__aarch64__)
constexpr bool kModelledArchitecture = true;
constexpr uint64_t kRegRbp = 29;  // x29
constexpr uint64_t kRegRsp = 31;  // sp
#else
constexpr bool kModelledArchitecture = false;
constexpr uint64_t kRegRbp = 6;
constexpr uint64_t kRegRsp = 7;
#endif

// DW_EH_PE pointer encodings (only the value format matters here: the
// function start comes from the FDE lookup, so pointers are only skipped).
constexpr uint8_t kPeOmit = 0xff;

class Reader {
 public:
  Reader(const uint8_t* pos, const uint8_t* end) : pos_(pos), end_(end) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ >= end_; }
  const uint8_t* pos() const { return pos_; }

  uint8_t U8() {
    if (pos_ + 1 > end_) return Fail();
    return *pos_++;
  }
  uint64_t Fixed(int bytes) {
    if (pos_ + bytes > end_) return Fail();
    uint64_t value = 0;
    std::memcpy(&value, pos_, bytes);  // little endian, as both modelled ISAs
    pos_ += bytes;
    return value;
  }
  uint64_t Uleb() {
    uint64_t value = 0;
    int shift = 0;
    while (true) {
      if (pos_ >= end_ || shift > 63) return Fail();
      const uint8_t byte = *pos_++;
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if ((byte & 0x80) == 0) return value;
    }
  }
  int64_t Sleb() {
    int64_t value = 0;
    int shift = 0;
    uint8_t byte = 0;
    do {
      if (pos_ >= end_ || shift > 63) return static_cast<int64_t>(Fail());
      byte = *pos_++;
      value |= static_cast<int64_t>(byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) value |= -(int64_t{1} << shift);
    return value;
  }
  // Skips a pointer of encoding `encoding`.
  void SkipEncoded(uint8_t encoding) {
    if (encoding == kPeOmit) return;
    switch (encoding & 0x0f) {
      case 0x00:  // absptr
      case 0x04:  // udata8
      case 0x0c:  // sdata8
        Skip(8);
        return;
      case 0x02:  // udata2
      case 0x0a:  // sdata2
        Skip(2);
        return;
      case 0x03:  // udata4
      case 0x0b:  // sdata4
        Skip(4);
        return;
      case 0x01:
        Uleb();
        return;
      case 0x09:
        Sleb();
        return;
      default:
        Fail();
    }
  }
  void Skip(uint64_t bytes) {
    if (bytes > static_cast<uint64_t>(end_ - pos_)) {
      Fail();
      return;
    }
    pos_ += bytes;
  }

 private:
  uint64_t Fail() {
    ok_ = false;
    pos_ = end_;
    return 0;
  }
  const uint8_t* pos_;
  const uint8_t* end_;
  bool ok_ = true;
};

// One .eh_frame record (CIE or FDE): its contents after the length field.
struct Record {
  const uint8_t* body = nullptr;
  const uint8_t* end = nullptr;
};

bool ReadRecord(const uint8_t* at, Record* record) {
  uint32_t length32 = 0;
  std::memcpy(&length32, at, 4);
  if (length32 == 0) return false;
  if (length32 == 0xffffffffu) {
    uint64_t length64 = 0;
    std::memcpy(&length64, at + 4, 8);
    record->body = at + 12;
    record->end = record->body + length64;
  } else {
    record->body = at + 4;
    record->end = record->body + length32;
  }
  return true;
}

// What a register's value in the caller is.
enum class RegRule : uint8_t {
  kSame,       // unchanged (also "not mentioned")
  kOffset,     // saved at CFA + offset
  kUndefined,  // lost (for the return address: end of stack)
  kAtFpOffset, // saved at rbp + offset (GCC's realigned frames, below)
  kOther,      // register, expression, val_offset, ...: not modelled
};

struct Row {
  uint64_t cfa_reg = kRegRsp;
  int64_t cfa_offset = 8;
  bool cfa_expression = false;
  // CFA = *(rbp + cfa_offset): the one CFA expression modelled.
  bool cfa_deref_fp = false;
  RegRule fp_rule = RegRule::kSame;
  int64_t fp_offset = 0;
  RegRule ra_rule = RegRule::kSame;
  int64_t ra_offset = 0;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = 16;
  uint8_t fde_encoding = 0;
  bool has_augmentation_data = false;
  bool signal_frame = false;
  const uint8_t* instructions = nullptr;
  const uint8_t* end = nullptr;
};

bool ParseCie(const Record& record, Cie* cie) {
  Reader in(record.body, record.end);
  if (in.Fixed(4) != 0) return false;  // CIE id of .eh_frame
  const uint8_t version = in.U8();
  const char* augmentation = reinterpret_cast<const char*>(in.pos());
  const size_t aug_len = strnlen(augmentation, record.end - in.pos());
  in.Skip(aug_len + 1);
  if (version >= 4) in.Skip(2);  // address and segment selector sizes
  cie->code_align = in.Uleb();
  cie->data_align = in.Sleb();
  cie->ra_reg = version == 1 ? in.U8() : in.Uleb();
  if (aug_len > 0 && augmentation[0] == 'z') {
    cie->has_augmentation_data = true;
    const uint64_t data_len = in.Uleb();
    const uint8_t* data_end = in.pos() + data_len;
    for (size_t i = 1; i < aug_len && in.ok(); ++i) {
      switch (augmentation[i]) {
        case 'R':
          cie->fde_encoding = in.U8();
          break;
        case 'L':
          in.U8();
          break;
        case 'P': {
          const uint8_t encoding = in.U8();
          in.SkipEncoded(encoding);
          break;
        }
        case 'S':
          cie->signal_frame = true;
          break;
        default:
          break;  // unknown letters carry no data we need ('z' sized it)
      }
    }
    if (data_end > record.end) return false;
    in = Reader(data_end, record.end);
  } else if (aug_len > 0) {
    return false;  // an augmentation without a size ("eh" of old GCCs)
  }
  cie->instructions = in.pos();
  cie->end = record.end;
  return in.ok();
}

// Reads a DWARF expression block (its length, then the expression) and
// says whether it is exactly "DW_OP_breg6 (rbp) offset", followed by
// DW_OP_deref when `deref`; the block is consumed either way.
bool ReadFpExpression(Reader& in, bool deref, int64_t* offset) {
  const uint64_t length = in.Uleb();
  const uint8_t* begin = in.pos();
  in.Skip(length);
  if (!in.ok()) return false;
  Reader expression(begin, begin + length);
  constexpr uint8_t kBregRbp = 0x70 + kRegRbp;  // DW_OP_breg0 + the register
  constexpr uint8_t kDeref = 0x06;
  if (expression.U8() != kBregRbp) return false;
  *offset = expression.Sleb();
  if (deref && expression.U8() != kDeref) return false;
  return expression.ok() && expression.done();
}

// Runs a CFA program until the row covering `target` (or the end).
// `initial` is the CIE's row, for DW_CFA_restore.
bool RunProgram(const Cie& cie, const uint8_t* begin, const uint8_t* end,
                uintptr_t loc, uintptr_t target, const Row& initial, Row* row) {
  constexpr int kMaxRemembered = 16;
  Row remembered[kMaxRemembered];
  int depth = 0;
  Reader in(begin, end);
  auto set_rule = [&](uint64_t reg, RegRule rule, int64_t offset) {
    if (reg == kRegRbp) {
      row->fp_rule = rule;
      row->fp_offset = offset;
    } else if (reg == cie.ra_reg) {
      row->ra_rule = rule;
      row->ra_offset = offset;
    }
  };
  auto restore = [&](uint64_t reg) {
    if (reg == kRegRbp) {
      row->fp_rule = initial.fp_rule;
      row->fp_offset = initial.fp_offset;
    } else if (reg == cie.ra_reg) {
      row->ra_rule = initial.ra_rule;
      row->ra_offset = initial.ra_offset;
    }
  };
  auto advance = [&](uint64_t delta) {
    loc += delta * cie.code_align;
    return loc <= target;
  };
  while (!in.done() && in.ok()) {
    const uint8_t op = in.U8();
    const uint8_t low = op & 0x3f;
    switch (op & 0xc0) {
      case 0x40:  // DW_CFA_advance_loc
        if (!advance(low)) return true;
        continue;
      case 0x80:  // DW_CFA_offset
        set_rule(low, RegRule::kOffset,
                 static_cast<int64_t>(in.Uleb()) * cie.data_align);
        continue;
      case 0xc0:  // DW_CFA_restore
        restore(low);
        continue;
      default:
        break;
    }
    switch (op) {
      case 0x00:  // nop
        break;
      case 0x02:
        if (!advance(in.U8())) return true;
        break;
      case 0x03:
        if (!advance(in.Fixed(2))) return true;
        break;
      case 0x04:
        if (!advance(in.Fixed(4))) return true;
        break;
      case 0x05: {  // offset_extended
        const uint64_t reg = in.Uleb();
        set_rule(reg, RegRule::kOffset,
                 static_cast<int64_t>(in.Uleb()) * cie.data_align);
        break;
      }
      case 0x06:  // restore_extended
        restore(in.Uleb());
        break;
      case 0x07:  // undefined
        set_rule(in.Uleb(), RegRule::kUndefined, 0);
        break;
      case 0x08:  // same_value
        set_rule(in.Uleb(), RegRule::kSame, 0);
        break;
      case 0x09: {  // register
        const uint64_t reg = in.Uleb();
        in.Uleb();
        set_rule(reg, RegRule::kOther, 0);
        break;
      }
      case 0x0a:  // remember_state (libgcc keeps the CFA with the row)
        if (depth == kMaxRemembered) return false;
        remembered[depth++] = *row;
        break;
      case 0x0b:  // restore_state
        if (depth == 0) return false;
        *row = remembered[--depth];
        break;
      case 0x0c:  // def_cfa
        row->cfa_reg = in.Uleb();
        row->cfa_offset = static_cast<int64_t>(in.Uleb());
        row->cfa_expression = false;
        row->cfa_deref_fp = false;
        break;
      case 0x0d:  // def_cfa_register
        row->cfa_reg = in.Uleb();
        row->cfa_expression = row->cfa_deref_fp;  // an offset of a load
        break;
      case 0x0e:  // def_cfa_offset
        row->cfa_offset = static_cast<int64_t>(in.Uleb());
        row->cfa_expression = row->cfa_deref_fp;
        break;
      case 0x0f: {  // def_cfa_expression
        // GCC's frames realigned through a DRAP register (AVX code with
        // alloca or stack arguments, thousands of them in libtorch): CFA
        // = *(rbp + offset), "DW_OP_breg6 offset; DW_OP_deref".
        int64_t offset = 0;
        const bool modelled = ReadFpExpression(in, /*deref=*/true, &offset);
        row->cfa_expression = !modelled;
        row->cfa_deref_fp = modelled;
        row->cfa_offset = modelled ? offset : row->cfa_offset;
        break;
      }
      case 0x10: {  // expression
        // The same frames save rbp at rbp + offset ("DW_OP_breg6 offset").
        const uint64_t reg = in.Uleb();
        int64_t offset = 0;
        if (ReadFpExpression(in, /*deref=*/false, &offset)) {
          set_rule(reg, RegRule::kAtFpOffset, offset);
        } else {
          set_rule(reg, RegRule::kOther, 0);
        }
        break;
      }
      case 0x16: {  // val_expression
        const uint64_t reg = in.Uleb();
        in.Skip(in.Uleb());
        set_rule(reg, RegRule::kOther, 0);
        break;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = in.Uleb();
        set_rule(reg, RegRule::kOffset, in.Sleb() * cie.data_align);
        break;
      }
      case 0x12:  // def_cfa_sf
        row->cfa_reg = in.Uleb();
        row->cfa_offset = in.Sleb() * cie.data_align;
        row->cfa_expression = false;
        row->cfa_deref_fp = false;
        break;
      case 0x13:  // def_cfa_offset_sf
        row->cfa_offset = in.Sleb() * cie.data_align;
        row->cfa_expression = row->cfa_deref_fp;
        break;
      case 0x14: {  // val_offset
        const uint64_t reg = in.Uleb();
        in.Uleb();
        set_rule(reg, RegRule::kOther, 0);
        break;
      }
      case 0x15: {  // val_offset_sf
        const uint64_t reg = in.Uleb();
        in.Sleb();
        set_rule(reg, RegRule::kOther, 0);
        break;
      }
      case 0x2e:  // GNU_args_size
        in.Uleb();
        break;
      case 0x2d:  // AArch64: negate_ra_state (SPARC's GNU_window_save)
        // The return address is signed from here on, or no longer: its
        // slot is the same, and CodeAddress strips any signature.
        if (kRegRsp != 31) return false;
        break;
      case 0x2f: {  // GNU_negative_offset_extended
        const uint64_t reg = in.Uleb();
        set_rule(reg, RegRule::kOffset,
                 -static_cast<int64_t>(in.Uleb()) * cie.data_align);
        break;
      }
      default:  // DW_CFA_set_loc and vendor opcodes: not modelled
        return false;
    }
  }
  return in.ok();
}

CfiRule Unsupported() { return CfiRule{}; }

CfiRule End() {
  CfiRule rule;
  rule.kind = CfiRule::Kind::kEnd;
  return rule;
}

}  // namespace

bool CfiRulesSupported() {
  return kModelledArchitecture && FindFde() != nullptr;
}

CfiRule ComputeCfiRule(uintptr_t pc) {
  // Elsewhere than x86-64 and AArch64 the code is still compiled (and its
  // helpers used) but never runs.
  if (!kModelledArchitecture) return Unsupported();
  const FindFdeFn find = FindFde();
  if (find == nullptr) return Unsupported();
  DwarfEhBases bases{};
  const auto* fde =
      static_cast<const uint8_t*>(find(reinterpret_cast<void*>(pc), &bases));
  if (fde == nullptr) return End();  // as libgcc: no FDE ends the stack
  Record fde_record;
  if (!ReadRecord(fde, &fde_record)) return Unsupported();
  uint32_t cie_pointer = 0;
  std::memcpy(&cie_pointer, fde_record.body, 4);
  Record cie_record;
  if (!ReadRecord(fde_record.body - cie_pointer, &cie_record)) {
    return Unsupported();
  }
  Cie cie;
  if (!ParseCie(cie_record, &cie) || cie.signal_frame) return Unsupported();
  Reader in(fde_record.body + 4, fde_record.end);
  in.SkipEncoded(cie.fde_encoding);                 // pc_begin
  in.SkipEncoded(cie.fde_encoding & 0x0f);          // pc_range
  if (cie.has_augmentation_data) in.Skip(in.Uleb());
  if (!in.ok()) return Unsupported();

  const auto start = reinterpret_cast<uintptr_t>(bases.func);
  Row row;
  // The CIE's program describes the function entry; its row is also what
  // DW_CFA_restore goes back to.
  if (!RunProgram(cie, cie.instructions, cie.end, start, UINTPTR_MAX, row,
                  &row)) {
    return Unsupported();
  }
  const Row initial = row;
  if (!RunProgram(cie, in.pos(), fde_record.end, start, pc, initial, &row)) {
    return Unsupported();
  }
  if (row.ra_rule == RegRule::kUndefined) return End();
  if (row.cfa_expression ||
      (!row.cfa_deref_fp && row.cfa_reg != kRegRsp && row.cfa_reg != kRegRbp))
    return Unsupported();
  // The return address sits right below the CFA on x86-64 (pushed by call);
  // on AArch64 wherever the callee saved x30 (a call site's frame has saved
  // it: the call overwrote the register).
  if (row.ra_rule != RegRule::kOffset || row.ra_offset >= 0 || row.ra_offset < INT32_MIN ||
      (kRegRsp != 31 && row.ra_offset != -8)) {
    return Unsupported();
  }
  if (row.fp_rule != RegRule::kSame && row.fp_rule != RegRule::kOffset &&
      row.fp_rule != RegRule::kAtFpOffset) {
    return Unsupported();
  }
  // A loaded CFA may sit at any offset from rbp; a computed one is above
  // the return address.
  const int64_t min_cfa_offset = row.cfa_deref_fp ? INT32_MIN : 8;
  if (row.cfa_offset < min_cfa_offset || row.cfa_offset > INT32_MAX ||
      row.fp_offset < INT16_MIN || row.fp_offset > INT16_MAX) {
    return Unsupported();
  }
  CfiRule rule;
  rule.kind = CfiRule::Kind::kStep;
  rule.cfa_from_frame_pointer = row.cfa_deref_fp || row.cfa_reg == kRegRbp;
  rule.cfa_loaded = row.cfa_deref_fp;
  rule.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  rule.frame_pointer_saved = row.fp_rule == RegRule::kOffset ||
                             row.fp_rule == RegRule::kAtFpOffset;
  rule.fp_saved_below_fp = row.fp_rule == RegRule::kAtFpOffset;
  rule.saved_fp_offset = static_cast<int16_t>(row.fp_offset);
#if defined(__aarch64__)
  rule.ra_offset = static_cast<int32_t>(row.ra_offset);
#endif
  return rule;
}

}  // namespace deepcontext::native

