"""Compiles the device kernels (linalg/cuda/*.cu after prelude.cuh, as linalg's NVRTC loader does,
--fmad=false) for sm_90 through NVRTC on a machine without a GPU, and fails on a compile error or a
spill: a first check before a device run. Each file gets one define set, the 3x3 / 3x6 blocks of
elasticity (DEFINES below) or the ones given; the device test `every_kernel_compiles_without_spills`
compiles every set the kernels are launched with and still has to run on a GPU. NVRTC comes from
PyPI: `pip install nvidia-cuda-nvrtc-cu12`.

Usage: python3 scripts/nvrtc_check.py [FILE.cu[:NAME=V,...] ...]   (default: every file of
linalg/cuda with DEFINES)
"""
import ctypes
import glob
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CUDA = ROOT / 'linalg' / 'cuda'
# one launched define set per file that needs one (the fine level of 3D elasticity)
DEFINES = {
    'coo.cu': {'BL': 9},
    'jacobi.cu': {'BS': 3},
    'qr.cu': {'BS': 3, 'K': 6},
    'spgemm.cu': {'AR': 3, 'AK': 3, 'BC': 6},
    'spmv.cu': {'BR': 3, 'BC': 3},
}


def nvrtc():
    try:
        import nvidia.cuda_nvrtc as pkg
    except ImportError:
        sys.exit('nvrtc_check: no NVRTC here (pip install nvidia-cuda-nvrtc-cu12)')
    libs = [l for p in pkg.__path__ for l in glob.glob(os.path.join(p, 'lib', 'libnvrtc.so*'))]
    if not libs:
        sys.exit('nvrtc_check: the nvidia-cuda-nvrtc package holds no libnvrtc.so')
    return ctypes.CDLL(sorted(libs)[0])


def compile_log(lib, name, text, defines):
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), name.encode(), 0, None, None):
        return 1, 'nvrtcCreateProgram failed'
    opts = [b'--gpu-architecture=sm_90', b'--std=c++17', b'--fmad=false', b'--ptxas-options=-v']
    opts += [f'-D{k}={v}'.encode() for k, v in defines.items()]
    rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, log.value.decode(errors='replace')


def main():
    lib = nvrtc()
    prelude = (CUDA / 'prelude.cuh').read_text()
    args = sys.argv[1:] or sorted(p.name for p in CUDA.glob('*.cu'))
    failed = False
    for arg in args:
        name, _, given = arg.partition(':')
        defines = DEFINES.get(name, {})
        if given:
            defines = {k: int(v) for k, v in (d.split('=') for d in given.split(','))}
        rc, log = compile_log(lib, name, prelude + '\n' + (CUDA / name).read_text(), defines)
        name = f'{name} {defines}' if defines else name
        function = ''
        spills = []
        for line in log.splitlines():
            if 'Function properties for ' in line:
                function = line.split('Function properties for ', 1)[1]
            if 'spill' in line and ' 0 bytes spill stores, 0 bytes spill loads' not in line:
                spills.append(f'{function}: {line.strip()}')
        if rc:
            print(f'{name}: compile error\n{log}')
        elif spills:
            print(f'{name}: spills\n  ' + '\n  '.join(spills))
        else:
            print(f'{name}: ok')
        failed |= bool(rc or spills)
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
