#!/usr/bin/python3
"""tools/ort_compare/ort_avx2.py's patch makes a program read XCR0 as an AVX2-only CPU's: a C program that
prints the XCR0 bits xgetbv returns prints 0x7 (x87, SSE, AVX state; no opmask/ZMM) after the patch, and
still runs. Before the patch it prints what this CPU's OS enables (0xe7 with AVX-512), so on an AVX-512
machine the test also shows the patch changed something. Exits 77 (skipped) without cc or objdump.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tools", "ort_compare"))
import ort_avx2  # noqa: E402

PROGRAM = r"""
#include <stdio.h>
int main(void) {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  printf("%#x\n", eax & 0xff);
  return 0;
}
"""


def xcr0_of(binary):
    return int(subprocess.run([binary], check=True, capture_output=True, text=True).stdout, 16)


def main():
    for tool in ("cc", "objdump"):
        if not shutil.which(tool):
            print(f"SKIPPED: {tool} is not installed")
            return 77
    with tempfile.TemporaryDirectory(prefix="ort-avx2-test-") as work:
        source, binary = os.path.join(work, "xcr0.c"), os.path.join(work, "xcr0")
        with open(source, "w") as f:
            f.write(PROGRAM)
        subprocess.run(["cc", "-O1", "-o", binary, source], check=True)
        before = xcr0_of(binary)
        patched = ort_avx2.patch(binary)
        after = xcr0_of(binary)
    print(f"XCR0 low byte before {before:#x}, after {after:#x}; {patched} xgetbv patched")
    if patched != 1 or after != 0x7:
        print("FAILED: the patched program must read XCR0 = 0x7 from its one xgetbv")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
