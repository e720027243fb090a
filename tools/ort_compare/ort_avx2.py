#!/usr/bin/python3
"""Makes a copy of onnxruntime-node that runs ONNX Runtime's AVX2 kernels on an AVX-512 CPU, so the AVX2
rows of suite.py compare onnxserve's AVX2 path with ORT's AVX2 path, as on a CPU without AVX-512.

  /usr/bin/python3 tools/ort_compare/ort_avx2.py   # writes node_modules/onnxruntime-node-avx2

ORT (MLAS and cpuinfo) enables its AVX-512 kernels only when XCR0, read with `xgetbv`, says the OS saves
the ZMM state. The copy's libonnxruntime.so has each `xgetbv` replaced by `push 7; pop rax` (same 3
bytes): XCR0 = x87 | SSE | AVX, what the OS reports on an AVX2-only CPU, so ORT takes its AVX2 path
everywhere. The instructions are found with objdump, not by searching bytes, so only real `xgetbv`
instructions change. bench.js loads the copy when ORT_NODE_PACKAGE names it.
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_MODULES = os.path.join(HERE, "node_modules")
PACKAGE = "onnxruntime-node"
AVX2_PACKAGE = "onnxruntime-node-avx2"
LIBRARY = os.path.join("bin", "napi-v6", "linux", "x64", "libonnxruntime.so.1")
XGETBV = bytes.fromhex("0f01d0")
XCR0_WITHOUT_AVX512 = bytes.fromhex("6a0758")  # push 7; pop rax


def text_section(library):
    """(virtual address, file offset, size) of .text, from objdump's section headers."""
    out = subprocess.run(["objdump", "-h", library], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == ".text":
            return int(fields[3], 16), int(fields[5], 16), int(fields[2], 16)
    raise RuntimeError(f"{library}: no .text section")


def xgetbv_addresses(library):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-j", ".text", library], check=True,
                         capture_output=True, text=True).stdout
    return [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s+xgetbv\s*$", out, re.M)]


def patch(library):
    """Rewrites every xgetbv of the library in place; returns how many."""
    vma, offset, size = text_section(library)
    addresses = xgetbv_addresses(library)
    if not addresses:
        raise RuntimeError(f"{library}: objdump finds no xgetbv; this ORT reads the CPU's state another way")
    with open(library, "r+b") as f:
        for address in addresses:
            if not vma <= address < vma + size:
                raise RuntimeError(f"{library}: xgetbv at {address:#x} lies outside .text")
            f.seek(address - vma + offset)
            if f.read(3) != XGETBV:
                raise RuntimeError(f"{library}: the bytes at {address:#x} are not xgetbv")
            f.seek(address - vma + offset)
            f.write(XCR0_WITHOUT_AVX512)
    return len(addresses)


def make_avx2_package(node_modules=NODE_MODULES):
    """The path of the AVX2-only copy, made once beside the original (a sibling, so that its own
    `require('onnxruntime-common')` resolves as the original's does)."""
    source = os.path.join(node_modules, PACKAGE)
    target = os.path.join(node_modules, AVX2_PACKAGE)
    library = os.path.join(target, LIBRARY)
    stamp = os.path.join(target, ".xgetbv-patched")
    if os.path.exists(stamp):
        return target
    if not os.path.isdir(source):
        raise RuntimeError(f"{source} is missing: (cd tools/ort_compare && ONNXRUNTIME_NODE_INSTALL=skip npm install)")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True)
    count = patch(library)
    with open(stamp, "w") as f:
        f.write(f"{count} xgetbv instructions now report XCR0 = 0x7\n")
    return target


def main():
    try:
        target = make_avx2_package()
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"ort_avx2: {e}")
    with open(os.path.join(target, ".xgetbv-patched")) as f:
        print(f"{target}: {f.read().strip()}")


if __name__ == "__main__":
    main()
