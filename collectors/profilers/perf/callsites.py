"""What the call before a return address called, read from the object's own file.

A frame-pointer stack whose leaf is in code without frame pointers (glibc, the vDSO) lists,
after the leaf, the return address found at the frame pointer, which is still the one of
the leaf's caller: so the frame it names is the caller's caller, and the caller is missing
(analysis/profile/skipped.py has the rule). Whether the frame listed is the leaf's true
caller can be read off the call instruction just before its return address:

- `call rel32` (E8) into the object's PLT (.plt, .plt.sec, .plt.got), or `call *slot(%rip)`
  (FF 15) through a GOT slot (.got, .got.plt: `-fno-plt` builds): a call into a shared
  object, so the frame listed may well be the leaf's caller: **library**;
- `call rel32` to a function of the object itself: that function is missing from the
  stack: **local**;
- any other `call *...` (FF /2 through a register or memory that is no GOT slot): a
  function pointer, in a server nearly always its own function (a command's proc, a
  connection type's read/write): **pointer**;
- no call instruction ends there, or the file cannot be read: None.

perf script prints user addresses relative to their object, as the ELF file's virtual
addresses (what objdump shows), so no load address is needed. Only ELF64 little-endian
objects (x86-64) are read; anything else answers None.
"""
from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field

PLT_SECTIONS = (b".plt", b".plt.sec", b".plt.got")
GOT_SECTIONS = (b".got", b".got.plt")
PT_LOAD = 1
SHT_RELA, SHT_DYNSYM = 4, 11


@dataclass
class ElfObject:
    """The parts of one ELF64 file a call site needs: its loaded segments (vaddr -> file
    offset), its PLT and GOT address ranges, and its bytes (mapped, read on demand)."""
    data: mmap.mmap
    segments: list[tuple[int, int, int]] = field(default_factory=list)   # (vaddr, size, offset)
    plt: list[tuple[int, int]] = field(default_factory=list)
    got: list[tuple[int, int]] = field(default_factory=list)
    slots: set[int] = field(default_factory=set)     # words a relocation fills with a symbol

    def read(self, vaddr: int, n: int) -> bytes | None:
        for start, size, off in self.segments:
            if start <= vaddr and vaddr + n <= start + size:
                return self.data[off + vaddr - start: off + vaddr - start + n]
        return None

    def call_kind(self, ret: int) -> str | None:
        """library | local | pointer | None for the call instruction that ends at `ret`."""
        code = self.read(ret - 7, 7) if ret >= 7 else None
        if code is None:
            return None
        if code[2] == 0xE8:                                   # call rel32
            target = ret + struct.unpack_from("<i", code, 3)[0]
            return "library" if _inside(target, self.plt) else "local"
        if code[1] == 0xFF and code[2] == 0x15:               # call *disp32(%rip)
            slot = ret + struct.unpack_from("<i", code, 3)[0]
            return "library" if slot in self.slots or _inside(slot, self.got) else "pointer"
        if _indirect_call(code):
            return "pointer"
        return None


def _inside(addr: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= addr < b for a, b in ranges)


def _indirect_call(code: bytes) -> bool:
    """`call *r/m64` (FF /2) of any length 2..7 ending at the end of `code` (7 bytes): the
    ModRM byte's reg field is 2 and its mod/rm say how many bytes follow it."""
    for length in range(2, 8):
        i = 7 - length                                        # where FF would be
        if code[i] != 0xFF:
            continue
        modrm = code[i + 1]
        if (modrm >> 3) & 7 != 2:
            continue
        mod, rm = modrm >> 6, modrm & 7
        follow = {0: 4 if rm == 5 else 0, 1: 1, 2: 4, 3: 0}[mod] + (1 if mod != 3 and rm == 4 else 0)
        if mod == 0 and rm == 4 and i + 2 < 7 and code[i + 2] & 7 == 5:
            follow += 4                                       # SIB with no base: disp32
        if 2 + follow == length:
            return True
    return False


def load_elf(path: str) -> ElfObject | None:
    """The file at `path` as an ElfObject, or None (absent, unreadable, not ELF64 LE)."""
    try:
        with open(path, "rb") as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        data.close()
        return None
    obj = ElfObject(data)
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == PT_LOAD:
            obj.segments.append((p_vaddr, p_filesz, p_offset))
    if shoff and shstrndx < shnum:
        _sections(obj, shoff, shentsize, shnum, shstrndx)
    return obj


def _sections(obj: ElfObject, shoff: int, shentsize: int, shnum: int, shstrndx: int) -> None:
    """The PLT and GOT ranges; and, as GOT slots too, every word a dynamic relocation fills
    with an undefined symbol's address (`static void *(*f)(size_t) = malloc;`: a pointer to
    a C library function kept in .data)."""
    data = obj.data
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_off = heads[shstrndx][4]
    for name, sh_type, _, addr, off, size, link, _, _, entsize in heads:
        sname = data[names_off + name: data.find(b"\0", names_off + name)]
        if sname in PLT_SECTIONS:
            obj.plt.append((addr, addr + size))
        elif sname in GOT_SECTIONS:
            obj.got.append((addr, addr + size))
        elif sh_type == SHT_RELA and entsize == 24 and link < shnum and heads[link][1] == SHT_DYNSYM:
            symtab = heads[link][4]
            for r in range(off, off + size, 24):
                r_offset, r_info = struct.unpack_from("<QQ", data, r)
                sym = r_info >> 32
                if sym and struct.unpack_from("<H", data, symtab + sym * 24 + 6)[0] == 0:   # st_shndx
                    obj.slots.add(r_offset)


class CallSites:
    """call_kind(dso path, return address) for the objects perf named, each file read once
    (None for one that cannot be: the vDSO, a deleted or foreign file)."""

    def __init__(self) -> None:
        self._objects: dict[str, ElfObject | None] = {}
        self._kinds: dict[tuple[str, int], str | None] = {}

    def __call__(self, dso: str, ret: int) -> str | None:
        key = (dso, ret)
        if key not in self._kinds:
            if dso not in self._objects:
                self._objects[dso] = load_elf(dso) if dso.startswith("/") else None
            obj = self._objects[dso]
            self._kinds[key] = obj.call_kind(ret) if obj is not None else None
        return self._kinds[key]

    def close(self) -> None:
        for obj in self._objects.values():
            if obj is not None:
                obj.data.close()
        self._objects.clear()
