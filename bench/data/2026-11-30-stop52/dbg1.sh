set -x
mkdir -p /tmp/o $OUT/dump
gunzip -c .devq/dbg/hexfem.gz > /tmp/hx; chmod +x /tmp/hx
nvrtc=$(ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc.so* 2>/dev/null | head -n 1)
export LD_LIBRARY_PATH="/usr/local/nvidia/lib64:${nvrtc:+$(dirname "$nvrtc"):}${LD_LIBRARY_PATH:-}"
HEXFEM_DBG_DUMP=$OUT/dump /tmp/hx run inputs/slender_beam.yaml --set device=cuda --set linear_solver.method=cg_amg -o /tmp/o/sb --overwrite > $OUT/run.txt 2>&1; echo rc $?
ls $OUT/dump | wc -l
